package builtin_test

import (
	"fmt"

	"github.com/containerd/nri/plugins/default-validator/builtin"
)

func ExampleGetDefaultValidator() {
	p := builtin.GetDefaultValidator(&builtin.DefaultValidatorConfig{
		Enable:                  true,
		RejectOCIHookAdjustment: true,
	})
	fmt.Println(p.Index+"-"+p.Base, p.Handlers.ValidateContainerAdjustment != nil)
	// Output: 00-default-validator true
}
