module bagel

go 1.26.0

require (
	github.com/dlclark/regexp2/v2 v2.13.0 // indirect
	github.com/ebitengine/purego v0.11.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
