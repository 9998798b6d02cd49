package cpu

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortedTopK is topK by a full stable sort: the obviously right answer.
func sortedTopK(row []float32, lo, hi, k int) ([]int32, []float32) {
	var order []int
	for i := lo; i < hi; i++ {
		if row[i] > negInf {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(row[j], row[i]) })
	ids, vals := make([]int32, k), make([]float32, k)
	for j := range k {
		ids[j], vals[j] = -1, negInf
		if j < len(order) {
			ids[j], vals[j] = int32(order[j]), row[order[j]]
		}
	}
	return ids, vals
}

// TestTopKMatchesASort: the selection keeps exactly what a stable sort keeps,
// ties to the lower index, over rows with repeated values, signed zeros,
// NaNs, infinities and fewer numbers than K.
func TestTopKMatchesASort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), negInf, 1, -1}
	for trial := range 2000 {
		n := 1 + r.IntN(300)
		row := make([]float32, n)
		for i := range row {
			switch r.IntN(6) {
			case 0:
				row[i] = special[r.IntN(len(special))]
			case 1:
				row[i] = float32(r.IntN(4)) // many ties
			default:
				row[i] = float32(r.NormFloat64())
			}
		}
		lo := r.IntN(n)
		hi := lo + r.IntN(n-lo+1)
		k := r.IntN(12)
		if trial%50 == 0 {
			k = 300 // more than the chunk holds
		}
		ids, vals := make([]int32, k), make([]float32, k)
		topK(row, lo, hi, ids, vals)
		wantIDs, wantVals := sortedTopK(row, lo, hi, k)
		if !slices.Equal(ids, wantIDs) {
			t.Fatalf("trial %d (row %v, [%d, %d), K %d): ids %v, want %v", trial, row, lo, hi, k, ids, wantIDs)
		}
		for j := range vals {
			if math.Float32bits(vals[j]) != math.Float32bits(wantVals[j]) {
				t.Fatalf("trial %d: vals %v, want %v", trial, vals, wantVals)
			}
		}
	}
}
