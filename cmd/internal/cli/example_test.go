package cli_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/nrinet/nrinet/cmd/internal/cli"
)

// A command's whole command line is read and checked before it does
// anything; Report (which Main calls, then exits) prints an error on one
// line and returns the exit status.
func ExampleCommand() {
	c := cli.New("nri-example", "Does one thing.", "-config FILE [flags]")
	config := c.Flags.String("config", "", "configuration `file`")
	var idx string
	c.StringVar(&idx, "idx", "10", "plugin `index`", func(s string) error {
		if len(s) != 2 {
			return errors.New("want two digits, 00 to 99")
		}
		return nil
	})
	run := func(args ...string) error {
		if err := c.Parse(args); err != nil {
			return err
		}
		if _, err := cli.ReadFile("config", *config); err != nil {
			return err
		}
		return nil // now act
	}
	fmt.Println(c.Report(run("-idx", "abc"), os.Stdout, os.Stdout))
	fmt.Println(c.Report(run("-config", "/nonexistent/x.json"), os.Stdout, os.Stdout))
	// Output:
	// nri-example: -idx "abc": want two digits, 00 to 99 (run 'nri-example -help' for usage)
	// 2
	// nri-example: -config "/nonexistent/x.json": no such file or directory
	// 2
}
