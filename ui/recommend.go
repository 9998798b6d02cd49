package ui

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
	"fyne.io/fyne/v2/widget"

	"bagel/engine"
	"bagel/hub"
)

// The empty chat without a model offers a few downloads that fit this
// machine, found on the Hub rather than listed in the app (the conversions
// come and go): the most downloaded MLX 4-bit checkpoints of the model types
// Bagel runs among mlx-community's Qwen3 family (Qwen3.5, Qwen3.6), each read
// (its files' sizes and config.json) and estimated at the settings' context
// length against this machine's memory, the largest that fits first. They are
// looked for once per run, when the welcome first needs them; offline, or
// when none fits, the welcome shows none.

// recommendation is one model the welcome offers.
type recommendation struct {
	repo    string
	bytes   int64  // to download
	verdict string // engine.MemoryBudget.Verdict's
}

const (
	recommendQuery  = "Qwen3"
	recommendAuthor = "mlx-community"
	recommendRead   = 8 // candidates whose sizes and config are read
	recommendShow   = 3
)

// fetchRecommendations starts the search for recommendations once; the
// welcome is refreshed when they arrive.
func (a *App) fetchRecommendations() {
	if a.recommendStarted {
		return
	}
	a.recommendStarted = true
	ctxLen, backend := a.settings.ContextLength, a.settings.Backend
	a.goSafe("finding models that fit this machine", func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		recs := recommend(ctx, hub.New(), ctxLen, a.memoryBudget(backend))
		a.do(func() {
			a.recommended = recs
			if a.chat != nil {
				a.chat.refreshEmpty()
			}
		})
	})
}

// recommend finds up to recommendShow models that fit budget at ctxLen.
func recommend(ctx context.Context, client *hub.Client, ctxLen int, budget engine.MemoryBudget) []recommendation {
	found, err := client.Search(ctx, recommendQuery, hub.SearchOptions{Author: recommendAuthor, Limit: 50})
	if err != nil {
		return nil
	}
	var out []recommendation
	read := 0
	for _, m := range found {
		if read == recommendRead {
			break
		}
		if !strings.Contains(strings.ToLower(m.ID), "4bit") || !slices.ContainsFunc(m.Tags, engine.SupportedModelType) {
			continue
		}
		read++
		p, err := client.Preview(ctx, m.ID, engine.SupportedModelType)
		if err != nil {
			continue
		}
		mem, err := engine.EstimateConfig(p.Config, p.Bytes, ctxLen)
		if err != nil {
			continue
		}
		if verdict, tooBig := budget.Verdict(mem); !tooBig {
			out = append(out, recommendation{repo: m.ID, bytes: p.Bytes, verdict: verdict})
		}
	}
	slices.SortStableFunc(out, func(x, y recommendation) int { return int(min(max(y.bytes-x.bytes, -1), 1)) })
	return out[:min(len(out), recommendShow)]
}

// recommendedItems are the welcome's "fits this machine" section: a title and
// a Download button per recommendation, which opens the Models dialog and
// starts the download there (with its progress, pause and cancel).
func (a *App) recommendedItems() []fyne.CanvasObject {
	if len(a.recommended) == 0 {
		return nil
	}
	items := []fyne.CanvasObject{widget.NewLabelWithStyle("Fits this machine (from the Hugging Face Hub)", fyne.TextAlignCenter, fyne.TextStyle{Bold: true})}
	for _, r := range a.recommended {
		b := widget.NewButtonWithIcon(fmt.Sprintf("%s · %.1f GB", r.repo, float64(r.bytes)/1e9), theme.DownloadIcon(), func() {
			a.showLibrary()
			a.lib.name.SetText(r.repo)
			a.lib.download()
		})
		b.Importance = widget.LowImportance
		note := widget.NewLabel(r.verdict)
		note.Alignment = fyne.TextAlignCenter
		note.Importance = widget.LowImportance
		note.Wrapping = fyne.TextWrapWord
		items = append(items, b, note)
	}
	return items
}
