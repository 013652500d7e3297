package opentsdb

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
)

// Lenient JSON scalars for the request bodies, accepting what Jackson's
// default coercions accept: a number or boolean where a string is expected,
// a string holding a number or boolean where those are expected.

// flexString is a string, or the text of a number or boolean; null is unset.
type flexString struct {
	s   string
	set bool
}

func (f *flexString) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*f = flexString{}
		return nil
	case b[0] == '"':
		f.set = true
		return json.Unmarshal(b, &f.s)
	case b[0] == '{' || b[0] == '[':
		return errors.New("expected a string, got " + kindOf(b))
	}
	f.s, f.set = string(b), true
	return nil
}

func kindOf(b []byte) string {
	if b[0] == '{' {
		return "an object"
	}
	return "an array"
}

// flexBool is a boolean, a string "true"/"false" (any case) or a number
// (0 is false); null is false.
type flexBool bool

func (f *flexBool) UnmarshalJSON(b []byte) error {
	s := string(b)
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.ToLower(strings.TrimSpace(s))
	}
	switch s {
	case "true":
		*f = true
	case "false", "null", "":
		*f = false
	default:
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return errors.New("expected a boolean, got " + string(b))
		}
		*f = v != 0
	}
	return nil
}

// flexInt64 is an integer, a number truncated toward zero, or a string
// holding either; null is unset.
type flexInt64 struct {
	v   int64
	set bool
}

func (f *flexInt64) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = flexInt64{}
		return nil
	}
	s := string(b)
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			*f = flexInt64{}
			return nil
		}
	}
	v, err := parseFlexInt(s)
	if err != nil {
		return errors.New("expected an integer, got " + string(b))
	}
	*f = flexInt64{v: v, set: true}
	return nil
}

func parseFlexInt(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, errors.New("not an integer")
	}
	return int64(f), nil
}

// flexFloat is a number or a string holding one.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	s := string(b)
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("expected a number, got " + string(b))
	}
	*f = flexFloat(v)
	return nil
}

// decodeJSON decodes a request body into v, with OpenTSDB's errors: an empty
// body is "Missing message content", anything unreadable "Unable to parse
// the given JSON" with the reason as details.
func decodeJSON(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return errMissingMessageContent()
	}
	if err := json.Unmarshal(body, v); err != nil {
		return errUnparseable(err.Error())
	}
	return nil
}
