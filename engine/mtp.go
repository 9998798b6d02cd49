package engine

import (
	"encoding/json"
	"path/filepath"

	"bagel/internal/regular"
	"bagel/ops"
	"bagel/qwen"
	"bagel/safetensors"
	"bagel/switches"
)

// Speculative decoding with the model's own multi-token-prediction head
// (qwen/mtp.go) as the drafter: the head guesses the next few tokens from the
// model's last hidden state, one small layer a guess, and the model verifies
// them as it verifies prompt lookup's (speculative.go): greedy replies equal
// plain greedy token for token, sampled ones keep the plain distribution.
// A rejected guess rolls the head back with the rest of the cache
// (qwen.Model.RewindMTP).

// SwitchSpeculativeMTP turns on MTP drafting for a model whose checkpoint has
// an MTP head; it takes precedence over prompt lookup.
const SwitchSpeculativeMTP = "speculative-mtp"

// DefaultMTPDraftLength is how many tokens the head guesses per step when
// Request.DraftLength is 0. A head trained for one step guesses its first
// token far better than the ones it chains on its own output (the demo model,
// CPU: 92% of first guesses kept, 55% over drafts of 2; vLLM and SGLang run
// Qwen's heads with 2 or 3): Request.DraftLength (--draft, the app's draft
// length) asks for more.
const DefaultMTPDraftLength = 1

func init() {
	switches.Register(switches.Switch{
		Name: SwitchSpeculativeMTP,
		Description: "Speculative decoding with the model's own multi-token-prediction head as the drafter (models whose " +
			"checkpoint has one, as mtp.* or mtp.safetensors), for greedy replies and sampled ones with a top-k; experimental.",
		Default: false,
		Env:     "BAGEL_SPECULATIVE_MTP",
	})
}

// VisionStatus says what the checkpoint holds of a vision tower (qwen's
// VisionStatus): present only for a tower that fits its vision_config.
func (e *Engine) VisionStatus() (present bool, status string) {
	return qwen.VisionStatus(e.Config, e.ck)
}

// MTPStatus says whether the model can draft with its MTP head: "" when it
// can, else why not (no head in the checkpoint, or one Bagel cannot run), in
// words for where the switch is offered.
func (e *Engine) MTPStatus() string {
	switch {
	case e.model.HasMTP():
		return ""
	case e.model.MTPProblem != "":
		return e.model.MTPProblem
	default:
		return "this checkpoint has no MTP head (mtp.* tensors or mtp.safetensors): most MLX conversions drop it"
	}
}

// mtpWanted is whether this reply drafts with the MTP head.
func (e *Engine) mtpWanted() bool { return e.model.HasMTP() && switches.On(SwitchSpeculativeMTP) }

// keepMTP sets whether the model's forwards keep the MTP head's cache in step
// (the head drafts only from a cache kept so since its last reset).
func (e *Engine) keepMTP(on bool) error {
	return e.loop.do(func() error {
		e.model.MTPOn = on
		return nil
	})
}

// mtpDrafts are the head's greedy guesses after last (up to n), none when its
// cache is out of step (a forward ran without it: the switch was off for the
// turn this cache's prefix came from).
func (s *speculator) mtpDrafts(last int32, n int) []int32 {
	e, cache := s.e, s.cache
	if cache == nil {
		cache = e.cache
	}
	var drafts []int32
	err := s.do(func() error {
		defer e.scratch.Reset()
		if !e.model.MTPReady(cache) {
			return nil
		}
		var err error
		drafts, err = e.model.MTPDraft(e.ctx, cache, last, n, func(logits ops.Tensor) (int32, error) {
			rows, err := e.readTopK(logits, 1, 1)
			if err != nil {
				return 0, err
			}
			return rows[0].greedy()
		})
		return err
	})
	if err != nil {
		return nil // the plain step that follows meets the device's error itself
	}
	return drafts
}

// MTPFiles says whether the model folder dir's config.json declares an MTP
// head (text_config's or its own mtp_num_hidden_layers above 0) and whether
// its files hold one (mtp.* tensors, or mtp.safetensors beside them): a pull
// tells a conversion that dropped the head this way.
func MTPFiles(dir string) (declared, present bool) {
	var cfg struct {
		MTPLayers  int `json:"mtp_num_hidden_layers"`
		TextConfig struct {
			MTPLayers int `json:"mtp_num_hidden_layers"`
		} `json:"text_config"`
	}
	if data, err := regular.ReadFile(filepath.Join(dir, "config.json"), 64<<20); err == nil && json.Unmarshal(data, &cfg) == nil {
		declared = cfg.MTPLayers > 0 || cfg.TextConfig.MTPLayers > 0
	}
	ck, err := safetensors.Open(dir)
	if err != nil {
		return declared, false
	}
	defer ck.Close()
	_, present = ck.Tensor("mtp.fc.weight")
	return declared, present
}
