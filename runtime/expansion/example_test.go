package expansion_test

import (
	"fmt"

	"github.com/podlife/podlife/runtime/expansion"
)

func ExampleExpand() {
	env := map[string]string{"POD_NAME": "web-0"}
	fmt.Println(expansion.Expand("logs/$(POD_NAME) $$(POD_NAME) $(UNKNOWN)", expansion.Lookup(env)))
	// Output: logs/web-0 $(POD_NAME) $(UNKNOWN)
}
