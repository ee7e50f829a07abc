// Command pause is the suite's pod sandbox ("pause") container: it waits
// for SIGTERM or SIGINT and exits 0. It is built without cgo, so that the
// image needs no C library.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
