package server

import "strings"

// stopper finds the first stop string in a streamed text. It holds back the
// end of the text that could still become a stop string, so that what it
// lets through never has to be taken back.
type stopper struct {
	stops []string
	buf   strings.Builder // text seen and not yet let through
	hit   string          // the stop string reached, once one is
}

// add takes more text; it returns what may be sent now, and whether a stop
// string was reached (the text before it is what is returned; the rest and
// the stop string are dropped).
func (s *stopper) add(text string) (out string, stopped bool) {
	if len(s.stops) == 0 {
		return text, false
	}
	s.buf.WriteString(text)
	all := s.buf.String()
	first := -1
	for _, stop := range s.stops {
		if i := strings.Index(all, stop); i >= 0 && (first < 0 || i < first) {
			first, s.hit = i, stop
		}
	}
	if first >= 0 {
		s.buf.Reset()
		return all[:first], true
	}
	keep := 0 // the longest tail of all that begins some stop string
	for _, stop := range s.stops {
		for n := min(len(stop)-1, len(all)); n > keep; n-- {
			if strings.HasSuffix(all, stop[:n]) {
				keep = n
				break
			}
		}
	}
	s.buf.Reset()
	s.buf.WriteString(all[len(all)-keep:])
	return all[:len(all)-keep], false
}

// flush returns the text held back at the end of the reply.
func (s *stopper) flush() string {
	out := s.buf.String()
	s.buf.Reset()
	return out
}
