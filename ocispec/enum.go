package ocispec

import "fmt"

// enumName returns the name of the protobuf enum value v (names is the
// enum's _name map), which is the OCI spec's word for it too; a value
// without a name is an invalid field, an unknown what.
func enumName[E ~int32](field string, v E, names map[int32]string, what string) (string, error) {
	name, ok := names[int32(v)]
	if !ok {
		return "", invalid(field, int32(v), "unknown %s", what)
	}
	return name, nil
}

// enumNames is enumName for a list of values, field[i] each, as the OCI
// spec's type S; nil for none.
func enumNames[S ~string, E ~int32](field string, vs []E, names map[int32]string, what string) ([]S, error) {
	var out []S
	for i, v := range vs {
		name, err := enumName(fmt.Sprintf("%s[%d]", field, i), v, names, what)
		if err != nil {
			return nil, err
		}
		out = append(out, S(name))
	}
	return out, nil
}
