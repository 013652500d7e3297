package errclass

import (
	"errors"
	"fmt"
	"testing"
)

func TestNewKeepsIdentityMessageAndClass(t *testing.T) {
	errA := New(ErrInvalid, "a refused")
	errB := New(ErrInvalid, "a refused")
	if errA.Error() != "a refused" {
		t.Fatalf("message %q", errA.Error())
	}
	if errors.Is(errA, errB) {
		t.Fatal("two sentinels with one message are the same error")
	}
	wrapped := fmt.Errorf("ctx: %w", errA)
	if !errors.Is(wrapped, errA) || !IsInvalid(wrapped) || IsUnavailable(wrapped) {
		t.Fatal("a wrapped sentinel lost its identity or class")
	}
	if Of(wrapped) != Invalid {
		t.Fatalf("Of = %v", Of(wrapped))
	}
	down := New(ErrUnavailable, "down")
	if Of(fmt.Errorf("x: %w", down)) != Unavailable || IsInvalid(down) {
		t.Fatal("unavailable sentinel misclassified")
	}
}

func TestOf(t *testing.T) {
	plain := errors.New("plain")
	for _, c := range []struct {
		err  error
		want Class
	}{
		{nil, Internal},
		{plain, Internal},
		{ErrInvalid, Invalid},
		{ErrUnavailable, Unavailable},
		{AsUnavailable(plain), Unavailable},
		{errors.Join(ErrUnavailable, ErrInvalid), Invalid},
	} {
		if got := Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

type codeError struct{ code int }

func (e *codeError) Error() string { return fmt.Sprint("code ", e.code) }

func TestAsKeepsWhatItWraps(t *testing.T) {
	if AsInvalid(nil) != nil || AsUnavailable(nil) != nil {
		t.Fatal("nil became an error")
	}
	inner := &codeError{7}
	err := AsInvalid(fmt.Errorf("outer: %w", inner))
	var ce *codeError
	if !errors.As(err, &ce) || ce.code != 7 {
		t.Fatal("errors.As lost the wrapped error")
	}
	if err.Error() != "outer: code 7" {
		t.Fatalf("message %q", err.Error())
	}
	if !IsInvalid(err) || IsUnavailable(err) {
		t.Fatal("class lost")
	}
}

func TestNewRefusesOtherClasses(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted a class of its own")
		}
	}()
	_ = New(errors.New("mine"), "x")
}
