package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe merges the byte-level symbols of one pre-tokenized piece into tokens.
type bpe struct {
	vocab        map[string]int
	merges       map[uint64]mergeRule // pairKey(left, right) -> rule
	byteID       [256]int32           // id of the one-byte token for each byte
	ignoreMerges bool                 // a piece that is itself a token skips merging

	mu    sync.Mutex
	cache map[string][]int32 // piece -> ids; cleared when it reaches cacheLimit
}

type mergeRule struct {
	rank int32 // position in the merges list; lower merges first
	id   int32 // the merged token
}

// cacheLimit bounds the word cache; ordinary text has far fewer distinct pieces.
const cacheLimit = 1 << 16

// maxCachedPiece: long pieces (whitespace runs, repeated characters) rarely repeat.
const maxCachedPiece = 256

func pairKey(left, right int32) uint64 { return uint64(uint32(left))<<32 | uint64(uint32(right)) }

func newBPE(vocab map[string]int, mergesJSON json.RawMessage, ignoreMerges bool) (*bpe, error) {
	pairs, err := parseMerges(mergesJSON)
	if err != nil {
		return nil, err
	}
	if len(pairs) == 0 {
		for tok := range vocab {
			if utf8.RuneCountInString(tok) > 1 {
				// Nothing could ever build such a token: every text would be
				// encoded byte by byte (21 ids where Hugging Face gives 9).
				return nil, fmt.Errorf("the BPE model has no merges, yet its vocabulary has multi-character tokens (%q): the file is incomplete", tok)
			}
		}
	}
	b := &bpe{vocab: vocab, merges: make(map[uint64]mergeRule, len(pairs)), ignoreMerges: ignoreMerges, cache: map[string][]int32{}}
	for c := 0; c < 256; c++ {
		id, ok := vocab[string(byteToRune[c])]
		if !ok {
			return nil, fmt.Errorf("vocab has no byte-level token for byte 0x%02x", c)
		}
		b.byteID[c] = int32(id)
	}
	for rank, p := range pairs {
		left, okL := vocab[p[0]]
		right, okR := vocab[p[1]]
		merged, okM := vocab[p[0]+p[1]]
		if !okL || !okR || !okM {
			return nil, fmt.Errorf("merge %d (%q %q) uses a token that is not in the vocab", rank, p[0], p[1])
		}
		key := pairKey(int32(left), int32(right))
		if _, dup := b.merges[key]; !dup { // the first (lowest) rank wins, as in tokenizers
			b.merges[key] = mergeRule{rank: int32(rank), id: int32(merged)}
		}
	}
	return b, nil
}

// parseMerges reads both spellings of the merges list: ["a b", ...] (older
// files) and [["a", "b"], ...].
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err == nil {
		return pairs, nil
	}
	var joined []string
	if err := json.Unmarshal(raw, &joined); err != nil {
		return nil, errors.New("model.merges is neither a list of pairs nor a list of strings")
	}
	pairs = make([][2]string, len(joined))
	for i, s := range joined {
		a, b, ok := strings.Cut(s, " ")
		if !ok {
			return nil, fmt.Errorf("merge %d (%q) is not two tokens separated by a space", i, s)
		}
		pairs[i] = [2]string{a, b}
	}
	return pairs, nil
}

// encodePiece appends the ids of one pre-tokenized piece (raw UTF-8 bytes).
func (b *bpe) encodePiece(piece string, out []int32) []int32 {
	if len(piece) == 1 {
		return append(out, b.byteID[piece[0]])
	}
	cacheable := len(piece) <= maxCachedPiece
	if cacheable {
		b.mu.Lock()
		ids, ok := b.cache[piece]
		b.mu.Unlock()
		if ok {
			return append(out, ids...)
		}
	}
	ids := b.merge(piece)
	if cacheable {
		b.mu.Lock()
		if len(b.cache) >= cacheLimit {
			clear(b.cache)
		}
		b.cache[strings.Clone(piece)] = ids
		b.mu.Unlock()
	}
	return append(out, ids...)
}

// symbol is one node of the doubly linked list of a piece's current tokens.
type symbol struct {
	id         int32
	prev, next int32 // neighbour indexes; -1 at the ends
	gone       bool  // merged into its left neighbour
}

// candidate is a possible merge of symbols[pos] with its right neighbour.
type candidate struct {
	rank, pos, id int32
}

// merge applies merges lowest rank first, leftmost first among equal ranks,
// with a heap of candidates and lazy deletion of stale ones: O(n log n) in the
// piece length, so a 100 KB run of one character is as cheap as 100 KB of prose
// (the textbook loop that rescans for the best pair after each merge is O(n²)).
func (b *bpe) merge(piece string) []int32 {
	if b.ignoreMerges {
		if id, ok := b.vocab[byteLevelString(piece)]; ok {
			return []int32{int32(id)}
		}
	}
	syms := make([]symbol, len(piece))
	for i := 0; i < len(piece); i++ {
		syms[i] = symbol{id: b.byteID[piece[i]], prev: int32(i - 1), next: int32(i + 1)}
	}
	syms[len(syms)-1].next = -1

	var heap candidateHeap
	for i := 0; i+1 < len(syms); i++ {
		if r, ok := b.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			heap.push(candidate{rank: r.rank, pos: int32(i), id: r.id})
		}
	}
	for len(heap) > 0 {
		c := heap.pop()
		left := &syms[c.pos]
		if left.gone || left.next < 0 {
			continue
		}
		right := &syms[left.next]
		// Stale if either side changed since the candidate was pushed.
		if r, ok := b.merges[pairKey(left.id, right.id)]; !ok || r.id != c.id {
			continue
		}
		left.id = c.id
		right.gone = true
		left.next = right.next
		if right.next >= 0 {
			syms[right.next].prev = c.pos
		}
		if left.prev >= 0 {
			if r, ok := b.merges[pairKey(syms[left.prev].id, left.id)]; ok {
				heap.push(candidate{rank: r.rank, pos: left.prev, id: r.id})
			}
		}
		if left.next >= 0 {
			if r, ok := b.merges[pairKey(left.id, syms[left.next].id)]; ok {
				heap.push(candidate{rank: r.rank, pos: c.pos, id: r.id})
			}
		}
	}
	var ids []int32
	for i := int32(0); i >= 0; i = syms[i].next {
		ids = append(ids, syms[i].id)
	}
	return ids
}

func byteLevelString(piece string) string {
	var sb strings.Builder
	for i := 0; i < len(piece); i++ {
		sb.WriteRune(byteToRune[piece[i]])
	}
	return sb.String()
}

// candidateHeap is a binary min-heap ordered by (rank, pos).
type candidateHeap []candidate

func (h candidateHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || (h[i].rank == h[j].rank && h[i].pos < h[j].pos)
}

func (h *candidateHeap) push(c candidate) {
	*h = append(*h, c)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *candidateHeap) pop() candidate {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		smallest, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s.less(l, smallest) {
			smallest = l
		}
		if r < len(s) && s.less(r, smallest) {
			smallest = r
		}
		if smallest == i {
			break
		}
		s[i], s[smallest] = s[smallest], s[i]
		i = smallest
	}
	*h = s
	return top
}
