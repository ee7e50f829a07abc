package apisurface

import (
	"fmt"
	"go/types"
	"strings"
)

// Import paths of the packages whose types the comparison maps.
const (
	// CompatAPI is this module's pkg/api.
	CompatAPI = "github.com/containerd/nri/pkg/api"
	// NrinetAPI is nrinet's api package, whose types CompatAPI aliases.
	NrinetAPI = "github.com/nrinet/nrinet/api"
)

// Compare checks that every declaration of upstream (from Parse) that
// leftOut gives no reason for exists in ours with the same kind, and
// functions and methods with the same signature. api is this module's
// pkg/api: nrinet's types in signatures count as its aliases, if it has
// an identical one under the same name. Compare returns the problems
// found and how many declarations it compared.
func Compare(upstream map[string]Decl, ours, api *types.Package, leftOut func(name string) string) (problems []string, checked int) {
	report := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	r := renderer{ours: ours, api: api, report: report}
	for _, name := range Names(upstream, Type, Func, Var, Const, Method) {
		up := upstream[name]
		got, sig := lookup(ours, name)
		if why := leftOut(name); why != "" {
			if got != nil {
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
