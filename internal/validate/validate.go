package validate

import (
	"fmt"
	"time"
)

// Number is what NonNegative checks: durations and counts.
type Number interface {
	~int | ~int32 | ~int64 | ~float32 | ~float64
}

// Named is one named option value.
type Named[T Number] struct {
	Name  string
	Value T
}

// Field names an option value for NonNegative.
func Field[T Number](name string, v T) Named[T] {
	return Named[T]{Name: name, Value: v}
}

// NonNegative returns one error for each negative value, naming it
// ("Timeout must not be negative, got -1s"), in the order given; nil when
// none is.
func NonNegative[T Number](fields ...Named[T]) []error {
	var errs []error
	for _, f := range fields {
		if f.Value < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative, got %v", f.Name, f.Value))
		}
	}
	return errs
}

// Durations is NonNegative for durations, the common case.
func Durations(fields ...Named[time.Duration]) []error {
	return NonNegative(fields...)
}
