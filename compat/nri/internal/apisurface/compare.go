package apisurface

import (
	"fmt"
	"go/types"
	"maps"
	"slices"
	"strings"
)

// Import paths of the packages whose types the comparison maps.
const (
	// CompatAPI is this module's pkg/api.
	CompatAPI = "github.com/containerd/nri/pkg/api"
	// NrinetAPI is nrinet's api package, whose types CompatAPI aliases.
	NrinetAPI = "github.com/nrinet/nrinet/api"
)

// ByHand starts the reason leftOut gives for a declaration that is
// provided but that Compare cannot compare (an interface embedding an
// unexported one); a test of its own checks it.
const ByHand = "by hand: "

// Compare checks that every declaration of upstream (from Parse) that
// leftOut gives no reason for exists in ours with the same kind, and
// functions and methods with the same signature. api is this module's
// pkg/api: nrinet's types in signatures count as its aliases, if it has
// an identical one under the same name. Compare returns the problems
// found and how many declarations it compared.
func Compare(upstream map[string]Decl, ours, api *types.Package, leftOut func(name string) string) (problems []string, checked int) {
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	r := renderer{ours: ours, api: api, report: report, leftOut: leftOut}
	for _, name := range Names(upstream, Type, Func, Var, Const, Method) {
		up := upstream[name]
		got, sig := lookup(ours, name)
		if why := leftOut(name); why != "" {
			if got != nil && !strings.HasPrefix(why, ByHand) {
				report("%s is provided, yet listed as left out (%s)", name, why)
			}
			continue
		}
		checked++
		switch {
		case got == nil:
			report("missing %s %s %s (upstream %s)", up.Kind, name, up.Sig, up.File)
		case kindOf(got) != up.Kind:
			report("%s is a %s, upstream a %s", name, kindOf(got), up.Kind)
		case sig != nil:
			if s := r.signature(name, sig); s != up.Sig {
				report("%s: signature %s, upstream %s", name, s, up.Sig)
			}
		case up.Fields != nil:
			r.compareFields(name, up.Fields, got.Type())
		case up.Methods != nil:
			r.compareMethods(name, up.Methods, got.Type())
		}
	}
	return problems, checked
}

// lookup finds name ("Name" or "Type.Method") in pkg; for functions and
// methods it also returns the signature.
func lookup(pkg *types.Package, name string) (types.Object, *types.Signature) {
	recv, method, isMethod := strings.Cut(name, ".")
	if !isMethod {
		obj := pkg.Scope().Lookup(name)
		if f, ok := obj.(*types.Func); ok {
			return f, f.Type().(*types.Signature)
		}
		return obj, nil
	}
	tn, ok := pkg.Scope().Lookup(recv).(*types.TypeName)
	if !ok {
		return nil, nil
	}
	sel := types.NewMethodSet(types.NewPointer(tn.Type())).Lookup(nil, method)
	if sel == nil {
		return nil, nil
	}
	f := sel.Obj().(*types.Func)
	return f, f.Type().(*types.Signature)
}

func kindOf(obj types.Object) Kind {
	switch obj := obj.(type) {
	case *types.TypeName:
		return Type
	case *types.Const:
		return Const
	case *types.Var:
		return Var
	case *types.Func:
		if obj.Type().(*types.Signature).Recv() != nil {
			return Method
		}
		return Func
	}
	return "?"
}

// renderer renders go/types signatures the way Parse renders upstream's.
type renderer struct {
	ours, api *types.Package
	report    func(format string, args ...any)
	leftOut   func(name string) string // asked about a struct field as "Type{Field}"
}

// qualifier qualifies types by import path, nrinet's api by this module's
// pkg/api (which aliases them), and ours not at all.
func (r renderer) qualifier(p *types.Package) string {
	path := p.Path()
	if path == NrinetAPI {
		path = CompatAPI
	}
	if path == r.ours.Path() {
		return ""
	}
	return path
}

// signature returns sig as "func(T1, T2) (R1)".
func (r renderer) signature(name string, sig *types.Signature) string {
	list := func(tuple *types.Tuple, variadic bool) string {
		var parts []string
		for i := range tuple.Len() {
			typ := tuple.At(i).Type()
			r.checkNamed(name, typ)
			s := types.TypeString(typ, r.qualifier)
			if variadic && i == tuple.Len()-1 {
				s = "..." + types.TypeString(typ.(*types.Slice).Elem(), r.qualifier)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ", ")
	}
	out := "func(" + list(sig.Params(), sig.Variadic()) + ") (" + list(sig.Results(), false) + ")"
	return strings.ReplaceAll(out, "interface{}", "any")
}

// checkNamed reports the named types of nrinet's api within typ that this
// module's pkg/api does not have, identical, under the same name: they
// would be rendered as if they were.
func (r renderer) checkNamed(name string, typ types.Type) {
	switch typ := types.Unalias(typ).(type) {
	case *types.Pointer:
		r.checkNamed(name, typ.Elem())
	case *types.Slice:
		r.checkNamed(name, typ.Elem())
	case *types.Array:
		r.checkNamed(name, typ.Elem())
	case *types.Map:
		r.checkNamed(name, typ.Key())
		r.checkNamed(name, typ.Elem())
	case *types.Signature:
		for _, tuple := range []*types.Tuple{typ.Params(), typ.Results()} {
			for i := range tuple.Len() {
				r.checkNamed(name, tuple.At(i).Type())
			}
		}
	case *types.Named:
		if typ.Obj().Pkg() == nil || typ.Obj().Pkg().Path() != NrinetAPI {
			return
		}
		alias, ok := r.api.Scope().Lookup(typ.Obj().Name()).(*types.TypeName)
		if !ok || !types.Identical(alias.Type(), typ) {
			r.report("%s: its signature uses nrinet's %s, which pkg/api does not alias", name, typ.Obj().Name())
		}
	}
}

// compareFields checks that struct type typ has every field of upstream's
// with the same type, and the same tag unless upstream's is a protobuf
// one (the generated code of nrinet's schema may spell those otherwise).
func (r renderer) compareFields(name string, upstream map[string]string, typ types.Type) {
	st, ok := typ.Underlying().(*types.Struct)
	if !ok {
		r.report("%s is not a struct, upstream's is", name)
		return
	}
	ours := map[string]string{}
	fieldTypes := map[string]types.Type{}
	for i := range st.NumFields() {
		f := st.Field(i)
		s := strings.ReplaceAll(types.TypeString(f.Type(), r.qualifier), "interface{}", "any")
		if tag := st.Tag(i); tag != "" {
			s += " `" + tag + "`"
		}
		ours[f.Name()], fieldTypes[f.Name()] = s, f.Type()
	}
	for _, field := range slices.Sorted(maps.Keys(upstream)) {
		want, got := upstream[field], ours[field]
		if why := r.leftOut(name + "{" + field + "}"); why != "" {
			if got != "" {
				r.report("%s.%s is provided, yet listed as left out (%s)", name, field, why)
			}
			continue
		}
		if t := fieldTypes[field]; t != nil {
			r.checkNamed(name+"."+field, t)
		}
		wantType, wantTag, _ := strings.Cut(want, " `")
		gotType, gotTag, _ := strings.Cut(got, " `")
		switch {
		case got == "":
			r.report("%s: missing field %s %s", name, field, want)
		case gotType != wantType:
			r.report("%s.%s: type %s, upstream %s", name, field, gotType, wantType)
		case !strings.HasPrefix(wantTag, "protobuf:") && gotTag != wantTag:
			r.report("%s.%s: tag `%s, upstream `%s", name, field, gotTag, wantTag)
		}
	}
}

// compareMethods checks that interface type typ has exactly upstream's
// methods, with the same signatures: a method more would break upstream's
// implementations of it.
func (r renderer) compareMethods(name string, upstream map[string]string, typ types.Type) {
	it, ok := typ.Underlying().(*types.Interface)
	if !ok {
		r.report("%s is not an interface, upstream's is", name)
		return
	}
	ours := map[string]string{}
	for i := range it.NumMethods() {
		m := it.Method(i)
		ours[m.Name()] = r.signature(name+"."+m.Name(), m.Type().(*types.Signature))
	}
	for _, m := range slices.Sorted(maps.Keys(upstream)) {
		if strings.HasPrefix(m, "embedded ") {
			r.report("%s: upstream's interface embeds %s; compare it by hand", name, strings.TrimPrefix(m, "embedded "))
			continue
		}
		switch got, ok := ours[m]; {
		case !ok:
			r.report("%s: missing method %s %s", name, m, upstream[m])
		case got != upstream[m]:
			r.report("%s.%s: signature %s, upstream %s", name, m, got, upstream[m])
		}
	}
	for _, m := range slices.Sorted(maps.Keys(ours)) {
		if _, ok := upstream[m]; !ok {
			r.report("%s: method %s is not upstream's", name, m)
		}
	}
}
