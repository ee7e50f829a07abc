package api

import "time"

// Default protocol timeouts. ConfigureRequest carries the values in effect
// in milliseconds.
const (
	// DefaultRegistrationTimeout bounds how long the runtime waits for
	// RegisterPlugin after a plugin connects.
	DefaultRegistrationTimeout = 5 * time.Second
	// DefaultRequestTimeout bounds how long a plugin may take to answer
	// one request (Configure, the whole of Synchronize, or one lifecycle
	// or validation request).
	DefaultRequestTimeout = 2 * time.Second
)
