// Package version is the version of the nhc-controller and kubectl-nhc
// binaries: stamped at build time with
//
//	-ldflags "-X github.com/nodehealthcheck/nhc-controller/pkg/version.stamped=vX.Y.Z"
//
// or else the module's version (go install ...@vX.Y.Z), or "(devel)".
package version

import "runtime/debug"

// stamped is set at build time.
var stamped = ""

// Get returns the binary's version.
func Get() string {
	if stamped != "" {
		return stamped
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
