package kernels

import (
	_ "embed"
	"fmt"
	"strings"
)

// contractDoc is kernels/README.md, whose table is the kernel contract.
//
//go:embed README.md
var contractDoc string

// ContractArg is one argument as the contract table names it.
type ContractArg struct {
	Name string
	F32  bool // a scalar marked f32 (others are int32)
}

// ContractRow is one kernel of the contract: its buffers and scalars in order.
type ContractRow struct {
	Name             string
	Buffers, Scalars []ContractArg
}

// Contract parses the table of kernels/README.md, the single description of
// every kernel's arguments that cpu/, the GPU kernels and their tests are held to.
// A "same" cell (or "same, out f32[...]") repeats the row above: the entries
// after it only retype arguments it already has.
func Contract() ([]ContractRow, error) {
	var rows []ContractRow
	var prev ContractRow
	for _, line := range strings.Split(contractDoc, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := splitTableRow(line)
		if len(cols) < 4 {
			return nil, fmt.Errorf("kernels/README.md: table row with %d columns: %s", len(cols), line)
		}
		row := ContractRow{Name: strings.Trim(cols[0], "` ")}
		row.Buffers, row.Scalars = cellArgs(cols[1]), cellArgs(cols[2])
		if len(row.Buffers) > 0 && row.Buffers[0].Name == "same" {
			row.Buffers = prev.Buffers
		}
		if len(row.Scalars) > 0 && row.Scalars[0].Name == "same" {
			row.Scalars = prev.Scalars
		}
		rows = append(rows, row)
		prev = row
	}
	return rows, nil
}

// splitTableRow splits a markdown table row on unescaped '|'.
func splitTableRow(line string) []string {
	line = strings.Trim(strings.TrimSpace(line), "|")
	var cols []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			cols = append(cols, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(cols, strings.TrimSpace(cur.String()))
}

// cellArgs reads the comma-separated entries of a cell outside brackets, each
// named by its first word ("eps f32" is the f32 scalar eps).
func cellArgs(cell string) []ContractArg {
	var args []ContractArg
	depth, start := 0, 0
	entry := func(s string) {
		if f := strings.Fields(s); len(f) > 0 {
			args = append(args, ContractArg{Name: f[0], F32: len(f) > 1 && f[1] == "f32"})
		}
	}
	for i, r := range cell {
		switch r {
		case '[', '(':
			depth++
		case ']', ')':
			depth--
		case ',':
			if depth == 0 {
				entry(cell[start:i])
				start = i + 1
			}
		}
	}
	entry(cell[start:])
	return args
}
