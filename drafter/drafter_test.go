package drafter

import (
	"slices"
	"testing"
)

func TestNGramDrafter(t *testing.T) {
	cases := []struct {
		name       string
		minN, maxN int
		history    []int32
		k          int
		want       []int32
	}{
		{"empty history", 1, 3, nil, 4, nil},
		{"one token", 1, 3, []int32{7}, 4, nil},
		{"no earlier match", 1, 3, []int32{1, 2, 3, 4}, 4, nil},
		{"unigram match", 1, 3, []int32{1, 2, 3, 1}, 3, []int32{2, 3, 1}},
		{"the loop goes on past the history", 1, 3, []int32{1, 2, 3, 1}, 4, []int32{2, 3, 1, 2}},
		{"k caps the draft", 1, 3, []int32{1, 2, 3, 1}, 2, []int32{2, 3}},
		{"k = 0", 1, 3, []int32{1, 2, 3, 1}, 0, nil},
		{"negative k", 1, 3, []int32{1, 2, 3, 1}, -1, nil},
		// 9 follows the bigram [1 2]; 5 follows the most recent lone 2
		{"longest suffix wins", 1, 3, []int32{1, 2, 9, 8, 2, 5, 6, 1, 2}, 2, []int32{9, 8}},
		{"maxN limits the suffix", 1, 1, []int32{1, 2, 9, 8, 2, 5, 6, 1, 2}, 2, []int32{5, 6}},
		{"minN refuses short matches", 2, 3, []int32{1, 2, 3, 4, 3}, 4, nil},
		{"most recent match", 1, 2, []int32{4, 1, 4, 2, 4}, 1, []int32{2}},
		{"trigram", 2, 4, []int32{5, 6, 7, 8, 0, 6, 7, 9, 5, 6, 7}, 3, []int32{8, 0, 6}},
		{"a run of one token goes on", 1, 3, []int32{3, 3, 3, 3}, 4, []int32{3, 3, 3, 3}},
		{"a loop of three, eight guesses", 1, 2, []int32{1, 2, 3, 1, 2}, 8, []int32{3, 1, 2, 3, 1, 2, 3, 1}},
		{"zero n values mean 1", 0, 0, []int32{1, 2, 1}, 1, []int32{2}},
		{"maxN below minN", 2, 1, []int32{1, 2, 9, 1, 2}, 1, []int32{9}},
		{"maxN longer than the history", 1, 100, []int32{1, 2, 1, 2}, 4, []int32{1, 2, 1, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NGramDrafter{MinN: c.minN, MaxN: c.maxN}
			history := slices.Clone(c.history)
			got := d.Draft(history, c.k)
			if !slices.Equal(got, c.want) {
				t.Errorf("Draft(%v, %d) = %v, want %v", c.history, c.k, got, c.want)
			}
			if !slices.Equal(history, c.history) {
				t.Errorf("Draft changed the history to %v", history)
			}
		})
	}
}

// TestDraftIsACopy: the caller appends to the history while it holds a draft.
func TestDraftIsACopy(t *testing.T) {
	history := make([]int32, 0, 16)
	history = append(history, 1, 2, 3, 1)
	draft := NGramDrafter{MinN: 1, MaxN: 2}.Draft(history, 3)
	history[1] = 42
	if !slices.Equal(draft, []int32{2, 3, 1}) {
		t.Errorf("the draft changed with the history: %v", draft)
	}
}

func TestNeverDrafter(t *testing.T) {
	var d Drafter = NeverDrafter{}
	if got := d.Draft([]int32{1, 2, 1, 2}, 4); got != nil {
		t.Errorf("NeverDrafter proposed %v", got)
	}
}
