module github.com/BurntSushi/toml-test

go 1.16

require (
	github.com/BurntSushi/toml v0.4.0
	// no_term branch, which doesn't depend on x/term and x/sys
	zgo.at/zli v0.0.0-20210619044753-e7020a328e59
)
