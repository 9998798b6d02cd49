module bagel

go 1.26.0

require (
	github.com/dlclark/regexp2/v2 v2.13.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)

require github.com/ebitengine/purego v0.11.3 // indirect
