package plugin_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nrinet/nrinet/api"
	"github.com/nrinet/nrinet/plugin"
	"github.com/nrinet/nrinet/runtime"
)

type podOnly struct{}

func (podOnly) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

func TestNew_Identity(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args0   string
		opts    []plugin.Option
		want    string
		wantErr string
	}{
		{name: "options", args0: "/usr/bin/x", opts: []plugin.Option{plugin.WithPluginName("net"), plugin.WithPluginIdx("10")}, want: "10-net"},
		{name: "environment", env: map[string]string{"NRI_PLUGIN_NAME": "podnet", "NRI_PLUGIN_IDX": "05"}, args0: "/x", want: "05-podnet"},
		{name: "options override environment", env: map[string]string{"NRI_PLUGIN_NAME": "a", "NRI_PLUGIN_IDX": "05"}, opts: []plugin.Option{plugin.WithPluginIdx("07")}, want: "07-a"},
		{name: "executable NN-name", args0: "/opt/nri/plugins/30-logger", want: "30-logger"},
		{name: "executable name with index option", args0: "/usr/local/bin/netagent", opts: []plugin.Option{plugin.WithPluginIdx("40")}, want: "40-netagent"},
		{name: "no index", args0: "/usr/local/bin/netagent", wantErr: `plugin "netagent": no plugin index`},
		{name: "bad name from env", env: map[string]string{"NRI_PLUGIN_NAME": "a b", "NRI_PLUGIN_IDX": "05"}, wantErr: `invalid plugin name`},
		{name: "bad index from env", env: map[string]string{"NRI_PLUGIN_NAME": "ab", "NRI_PLUGIN_IDX": "5"}, wantErr: `invalid plugin index "5"`},
		{name: "bad name option", opts: []plugin.Option{plugin.WithPluginName("x/y")}, wantErr: `WithPluginName`},
		{name: "bad index option", opts: []plugin.Option{plugin.WithPluginIdx("abc")}, wantErr: `WithPluginIdx: api: invalid plugin index "abc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			s, err := plugin.New(podOnly{}, append([]plugin.Option{plugin.WithEnv(getenv, tc.args0)}, tc.opts...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Name() != tc.want {
				t.Fatalf("Name() = %q, want %q", s.Name(), tc.want)
			}
		})
	}
}

func TestNew_NoHandlers(t *testing.T) {
	_, err := plugin.New(struct{}{}, plugin.WithPluginName("x"), plugin.WithPluginIdx("10"))
	if !errors.Is(err, plugin.ErrNoHandlers) {
		t.Fatalf("New = %v, want ErrNoHandlers", err)
	}
}

func TestStub_StartWithoutRuntime(t *testing.T) {
	s, err := plugin.New(podOnly{}, plugin.WithPluginName("x"), plugin.WithPluginIdx("10"),
		plugin.WithSocketPath(t.TempDir()+"/missing.sock"), plugin.WithEnv(func(string) string { return "" }, "x"))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), `plugin "10-x": connecting to runtime`) {
		t.Fatalf("Start = %v", err)
	}
	if _, err := s.UpdateContainers(context.Background(), nil, nil); !errors.Is(err, plugin.ErrNotStarted) {
		t.Fatalf("UpdateContainers = %v, want ErrNotStarted", err)
	}
}

func TestStub_BadInheritedSocket(t *testing.T) {
	env := map[string]string{"NRI_PLUGIN_SOCKET": "three"}
	s, err := plugin.New(podOnly{}, plugin.WithPluginName("x"), plugin.WithPluginIdx("10"),
		plugin.WithEnv(func(k string) string { return env[k] }, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err == nil || !strings.Contains(err.Error(), `NRI_PLUGIN_SOCKET="three"`) {
		t.Fatalf("Start = %v", err)
	}
}

type bothPods struct{ podOnly }

func (bothPods) RunPodSandboxNetwork(context.Context, *api.PodSandbox) (*api.PodSandboxNetwork, error) {
	return nil, nil
}

type bothCreates struct{}

func (bothCreates) CreateContainer(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	return nil, nil, nil
}

func (bothCreates) CreateContainerEvict(context.Context, *api.PodSandbox, *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, []*api.ContainerEviction, error) {
	return nil, nil, nil, nil
}

type bothUpdates struct{}

func (bothUpdates) UpdateContainer(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func (bothUpdates) UpdateContainerEvict(context.Context, *api.PodSandbox, *api.Container, *api.LinuxResources) ([]*api.ContainerUpdate, []*api.ContainerEviction, error) {
	return nil, nil, nil
}

// TestNew_OneVariantPerEvent: a handler with two variants of one event
// would have one of them silently ignored; New refuses it.
func TestNew_OneVariantPerEvent(t *testing.T) {
	for _, tc := range []struct {
		h    any
		want string
	}{
		{bothPods{}, "both RunPodSandbox and RunPodSandboxNetwork"},
		{bothCreates{}, "both CreateContainer and CreateContainerEvict"},
		{bothUpdates{}, "both UpdateContainer and UpdateContainerEvict"},
	} {
		_, err := plugin.New(tc.h, plugin.WithPluginName("x"), plugin.WithPluginIdx("10"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%T) = %v, want an error saying %q", tc.h, err, tc.want)
		}
	}
}

// infoReader records what RuntimeInfoFromContext gives its Configure.
type infoReader struct {
	podOnly
	got chan runtimeInfoResult
}

type runtimeInfoResult struct {
	info plugin.RuntimeInfo
	ok   bool
}

func (r infoReader) Configure(ctx context.Context, _, _, _ string) (api.EventMask, error) {
	info, ok := plugin.RuntimeInfoFromContext(ctx)
	r.got <- runtimeInfoResult{info, ok}
	return 0, nil
}

// TestRuntimeInfoFromContext: a ConfigureHandler sees the runtime's NRI
// version and timeouts while it decides its subscription; other contexts
// carry none.
func TestRuntimeInfoFromContext(t *testing.T) {
	if _, ok := plugin.RuntimeInfoFromContext(context.Background()); ok {
		t.Error("RuntimeInfoFromContext(context.Background()) reported a runtime")
	}
	sock := socketPath(t)
	startRuntime(t, sock, runtime.WithNRIVersion("v9.8.7"),
		runtime.WithRegistrationTimeout(3*time.Second), runtime.WithRequestTimeout(1500*time.Millisecond))
	r := infoReader{got: make(chan runtimeInfoResult, 1)}
	s := newStub(t, r, sock)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	got := receive(t, r.got, "Configure")
	want := plugin.RuntimeInfo{
		Name: "plugin-test-runtime", Version: "v0", NRIVersion: "v9.8.7",
		RegistrationTimeout: 3 * time.Second, RequestTimeout: 1500 * time.Millisecond,
		NetworkExtension: api.NetworkExtensionVersion,
	}
	if !got.ok || got.info != want {
		t.Errorf("RuntimeInfoFromContext in Configure = %+v, %v; want %+v, true", got.info, got.ok, want)
	}
	after, _ := s.Runtime()
	want.Events = api.EventMask(0).Set(api.Event_RUN_POD_SANDBOX)
	if after != want {
		t.Errorf("Runtime() after Configure = %+v, want %+v", after, want)
	}
}
