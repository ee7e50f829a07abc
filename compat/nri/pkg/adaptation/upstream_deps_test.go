package adaptation

// The modules upstream's adaptation tests import, which make
// upstream-suite (hack/upstream-suite.sh) compiles next to this package:
// listed here so that go.mod keeps them.
import (
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/google/go-cmp/cmp/cmpopts"
	_ "github.com/stretchr/testify/require"
	_ "google.golang.org/protobuf/testing/protocmp"
)
