// Package adjust is what the suite's two adjuster plugins share: the
// command line that says which container to adjust and how. One plugin is
// written on upstream's github.com/containerd/nri/pkg/stub, the other on
// nrinet's plugin package; the two API packages register the same protobuf
// schema and cannot be linked into one binary, so this package imports
// neither.
package adjust

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
)

// Synchronized is the line a plugin prints on stdout when the runtime has
// synchronized it: from then on it receives container events.
const Synchronized = "synchronized"

// Adjusted is the prefix of the line a plugin prints on stdout for each
// container it adjusted, followed by the container's ID.
const Adjusted = "adjusted "

// Spec is one plugin's command line.
type Spec struct {
	// Socket is the runtime's NRI socket.
	Socket string
	// Name and Idx are the plugin's name and index.
	Name, Idx string
	// Container is the name (CRI metadata name) of the containers to
	// adjust; other containers are left alone.
	Container string
	// EnvKey=EnvValue is added to the container's environment.
	EnvKey, EnvValue string
	// AnnotationKey=AnnotationValue is added to its annotations.
	AnnotationKey, AnnotationValue string
	// MountSource is bind-mounted read-only at MountDestination.
	MountSource, MountDestination string
	// MemoryLimit is set as the container's memory limit, in bytes.
	MemoryLimit int64
}

// Parse reads a Spec from the command line args (without the program
// name). Every flag is required.
func Parse(program string, args []string) (Spec, error) {
	var s Spec
	var env, annotation, mount, memory string
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.StringVar(&s.Socket, "socket", "", "the runtime's NRI socket")
	fs.StringVar(&s.Name, "name", "", "plugin name")
	fs.StringVar(&s.Idx, "idx", "", "plugin index")
	fs.StringVar(&s.Container, "container", "", "name of the containers to adjust")
	fs.StringVar(&env, "env", "", "KEY=VALUE to add to the environment")
	fs.StringVar(&annotation, "annotation", "", "KEY=VALUE to add to the annotations")
	fs.StringVar(&mount, "mount", "", "HOST-DIR:CONTAINER-DIR to bind-mount read-only")
	fs.StringVar(&memory, "memory", "", "memory limit in bytes")
	if err := fs.Parse(args); err != nil {
		return Spec{}, err
	}
	for name, v := range map[string]string{"socket": s.Socket, "name": s.Name, "idx": s.Idx,
		"container": s.Container, "env": env, "annotation": annotation, "mount": mount, "memory": memory} {
		if v == "" {
			return Spec{}, fmt.Errorf("%s: -%s is required", program, name)
		}
	}
	var ok bool
	if s.EnvKey, s.EnvValue, ok = strings.Cut(env, "="); !ok || s.EnvKey == "" {
		return Spec{}, fmt.Errorf("%s: -env %q: want KEY=VALUE", program, env)
	}
	if s.AnnotationKey, s.AnnotationValue, ok = strings.Cut(annotation, "="); !ok || s.AnnotationKey == "" {
		return Spec{}, fmt.Errorf("%s: -annotation %q: want KEY=VALUE", program, annotation)
	}
	if s.MountSource, s.MountDestination, ok = strings.Cut(mount, ":"); !ok || s.MountSource == "" || s.MountDestination == "" {
		return Spec{}, fmt.Errorf("%s: -mount %q: want HOST-DIR:CONTAINER-DIR", program, mount)
	}
	n, err := strconv.ParseInt(memory, 10, 64)
	if err != nil || n <= 0 {
		return Spec{}, fmt.Errorf("%s: -memory %q: want a positive number of bytes", program, memory)
	}
	s.MemoryLimit = n
	return s, nil
}

// Args is the command line that Parse reads back as s.
func (s Spec) Args() []string {
	return []string{
		"-socket", s.Socket, "-name", s.Name, "-idx", s.Idx, "-container", s.Container,
		"-env", s.EnvKey + "=" + s.EnvValue,
		"-annotation", s.AnnotationKey + "=" + s.AnnotationValue,
		"-mount", s.MountSource + ":" + s.MountDestination,
		"-memory", strconv.FormatInt(s.MemoryLimit, 10),
	}
}

// MountOptions returns the options of the bind mount both plugins add.
func MountOptions() []string { return []string{"rbind", "ro"} }
