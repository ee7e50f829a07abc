package adaptation

import (
	"sync"
	"time"

	"github.com/containerd/nri/pkg/api"
)

const (
	// DefaultPluginRegistrationTimeout is the default for
	// SetPluginRegistrationTimeout.
	DefaultPluginRegistrationTimeout = api.DefaultPluginRegistrationTimeout
	// DefaultPluginRequestTimeout is the default for
	// SetPluginRequestTimeout.
	DefaultPluginRequestTimeout = api.DefaultPluginRequestTimeout
)

// Upstream's plugin timeouts are process-wide settings; nrinet's runtime
// takes them as options, read here when an Adaptation starts.
var (
	timeoutMu                 sync.RWMutex
	pluginRegistrationTimeout = api.DefaultPluginRegistrationTimeout
	pluginRequestTimeout      = api.DefaultPluginRequestTimeout
)

// SetPluginRegistrationTimeout sets how long a connected plugin has to
// register, for Adaptations started from now on.
func SetPluginRegistrationTimeout(t time.Duration) {
	timeoutMu.Lock()
	defer timeoutMu.Unlock()
	pluginRegistrationTimeout = t
}

// SetPluginRequestTimeout sets how long a plugin has for each request, for
// Adaptations started from now on.
func SetPluginRequestTimeout(t time.Duration) {
	timeoutMu.Lock()
	defer timeoutMu.Unlock()
	pluginRequestTimeout = t
}

func getPluginRegistrationTimeout() time.Duration {
	timeoutMu.RLock()
	defer timeoutMu.RUnlock()
	if pluginRegistrationTimeout <= 0 {
		return api.DefaultPluginRegistrationTimeout
	}
	return pluginRegistrationTimeout
}

func getPluginRequestTimeout() time.Duration {
	timeoutMu.RLock()
	defer timeoutMu.RUnlock()
	if pluginRequestTimeout <= 0 {
		return api.DefaultPluginRequestTimeout
	}
	return pluginRequestTimeout
}
