package cri

import (
	"fmt"
	"testing"
)

// termMessages forgets, at a full listing, the containers that are gone,
// once it has grown past max(1024, twice its size after the last pruning).
func TestTermMessagesPrune(t *testing.T) {
	var tm termMessages
	for i := range minPrune - 1 {
		tm.put(fmt.Sprint(i), "m")
	}
	tm.put("", "ignored")
	if tm.due() {
		t.Fatalf("due at %d entries, below %d", tm.size(), minPrune)
	}
	tm.put("last", "m")
	if !tm.due() {
		t.Fatalf("not due at %d entries", tm.size())
	}
	present := map[string]bool{"last": true, "7": true, "absent": true}
	tm.prune(present)
	if tm.size() != 2 {
		t.Fatalf("%d entries after the pruning, want the 2 present", tm.size())
	}
	if msg, ok := tm.get("7"); !ok || msg != "m" {
		t.Fatalf("7: %q %v", msg, ok)
	}
	if _, ok := tm.get("8"); ok {
		t.Fatal("8 kept, though gone")
	}
	if tm.due() {
		t.Fatal("due right after a pruning")
	}
}
