package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/metrics/prometheus/version" // the version metric, as the components' mains register it
	kcm "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// The node components of `cluster up`, each a mode of this binary (`kube-harness kubelet DIR`, and
// so on) run as its own process, as upstream runs them: their feature gates, klog and global
// flags are process-wide. Each reads DIR/cluster.json and DIR's certificates, and runs the
// upstream command (cmd/*/app of the pinned k8s.io/kubernetes) with flags built here.

// runCommand runs an upstream cobra command with args, as its main would.
func runCommand(name string, command *cobra.Command, args []string) error {
	command.SetArgs(args)
	if code := cli.Run(command); code != 0 {
		return fmt.Errorf("%s exited with status %d", name, code)
	}
	return nil
}

func runControllerManager(dir string) error {
	state, err := readClusterState(dir)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dir)
	file := func(name string) string { return filepath.Join(abs, name) }
	controllers := "*"
	if !state.EndpointControllers {
		// weir writes Endpoints and EndpointSlices in this cluster; the mirroring controller
		// stays, as it only mirrors selector-less Services' Endpoints.
		controllers = "*,-endpoints-controller,-endpointslice-controller"
	}
	return runCommand("kube-controller-manager", kcm.NewControllerManagerCommand(), []string{
		"--kubeconfig=" + file(componentKubeconfig("controller-manager")),
		"--controllers=" + controllers,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", state.ControllerManagerPort),
		// One service account per controller, as kubeadm runs it: the controller-manager's own
		// identity (system:kube-controller-manager) may only read what it needs to start them.
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + file(saKeyFile),
		"--root-ca-file=" + file(caCertFile),
		"--cluster-name=kube-harness",
		"--v=1",
	})
}

func runScheduler(dir string) error {
	state, err := readClusterState(dir)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dir)
	return runCommand("kube-scheduler", scheduler.NewSchedulerCommand(), []string{
		"--kubeconfig=" + filepath.Join(abs, componentKubeconfig("scheduler")),
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", state.SchedulerPort),
		"--v=1",
	})
}

// kubeletConfig is the node's KubeletConfiguration. failCgroupV1 is false because the harness
// machines mount cgroup v1 (the kubelet refuses v1 by default since 1.35); the cgroupfs driver
// because no systemd runs as PID 1. Image garbage collection and the disk eviction thresholds
// are off: the images are imported, not pulled, and a GC would leave nothing to run.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://{{socket}}
address: {{nodeIP}}
port: {{port}}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: {{healthzPort}}
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: {{ca}}
authorization:
  mode: AlwaysAllow
failSwapOn: false
podLogsDir: {{podLogs}}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
  imagefs.inodesFree: 1%
serializeImagePulls: false
resolvConf: /etc/resolv.conf
`

func runKubelet(dir string) error {
	state, err := readClusterState(dir)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dir)
	file := func(name string) string { return filepath.Join(abs, name) }
	config := strings.NewReplacer(
		"{{socket}}", containerdSocket(abs),
		"{{nodeIP}}", state.NodeIP,
		"{{port}}", fmt.Sprint(state.KubeletPort),
		"{{healthzPort}}", fmt.Sprint(state.KubeletHealthzPort),
		"{{ca}}", file(caCertFile),
		"{{podLogs}}", file("kubelet/pod-logs"),
	).Replace(kubeletConfig)
	if err := os.MkdirAll(file("kubelet/pod-logs"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(file("kubelet-config.yaml"), []byte(config), 0o600); err != nil {
		return err
	}
	return runCommand("kubelet", kubelet.NewKubeletCommand(context.Background()), []string{
		"--config=" + file("kubelet-config.yaml"),
		"--kubeconfig=" + file(componentKubeconfig("kubelet")),
		"--root-dir=" + file("kubelet/root"),
		"--cert-dir=" + file("kubelet/pki"),
		"--hostname-override=" + state.Node,
		"--node-ip=" + state.NodeIP,
		// cAdvisor's containerd factory (deprecated flag, still read) dials
		// /run/containerd/containerd.sock unless told: "Registration of the containerd container
		// factory failed: ... dial unix /run/containerd/containerd.sock".
		"--containerd=" + containerdSocket(abs),
		"--v=1",
	})
}

// kubeProxyConfig: conntrack's sysctls are left as the machine has them (maxPerCore and the
// TCP timeouts 0), since the node is a shared development or CI machine.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: {{mode}}
clientConnection:
  kubeconfig: {{kubeconfig}}
hostnameOverride: {{node}}
healthzBindAddress: 127.0.0.1:{{healthzPort}}
metricsBindAddress: 127.0.0.1:{{metricsPort}}
clusterCIDR: {{podCIDR}}
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// runKubeProxy runs kube-proxy in DIR's proxy mode. `kube-harness kube-proxy DIR --cleanup`
// removes the rules of that mode and exits, as `kube-proxy --cleanup` does.
func runKubeProxy(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("expected the state directory\n\n%s", usage)
	}
	dir := args[0]
	state, err := readClusterState(dir)
	if err != nil {
		return err
	}
	abs, _ := filepath.Abs(dir)
	config := strings.NewReplacer(
		"{{mode}}", state.ProxyMode,
		"{{kubeconfig}}", filepath.Join(abs, componentKubeconfig("kube-proxy")),
		"{{node}}", state.Node,
		"{{healthzPort}}", fmt.Sprint(state.ProxyHealthzPort),
		"{{metricsPort}}", fmt.Sprint(state.ProxyMetricsPort),
		"{{podCIDR}}", state.PodCIDR,
	).Replace(kubeProxyConfig)
	configFile := filepath.Join(abs, "kube-proxy-config.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		return err
	}
	return runCommand("kube-proxy", proxy.NewProxyCommand(), append([]string{"--config=" + configFile, "--v=1"}, args[1:]...))
}
