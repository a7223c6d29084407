package validate_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/podlife/podlife/internal/validate"
)

func TestNonNegative(t *testing.T) {
	errs := validate.Durations(validate.Field("A", time.Second), validate.Field("B", -time.Second), validate.Field("C", time.Duration(0)), validate.Field("D", -2*time.Minute))
	got := errors.Join(errs...)
	want := "B must not be negative, got -1s\nD must not be negative, got -2m0s"
	if got == nil || got.Error() != want {
		t.Fatalf("got %v, want %q", got, want)
	}
	if errs := validate.NonNegative(validate.Field("QPS", float32(0.5)), validate.Field("X", float32(0))); errs != nil {
		t.Fatalf("valid values: %v", errs)
	}
	if errs := validate.NonNegative(validate.Field("Burst", -3)); len(errs) != 1 || errs[0].Error() != "Burst must not be negative, got -3" {
		t.Fatalf("int: %v", errs)
	}
}

func ExampleDurations() {
	errs := validate.Durations(validate.Field("Timeout", 2*time.Minute), validate.Field("MaxBackOff", -time.Second))
	fmt.Println(errors.Join(errs...))
	// Output: MaxBackOff must not be negative, got -1s
}
