package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"weir/tests/upstream/internal/procs"
)

// A one-node cluster on this machine: `cluster up DIR` starts what `up DIR` starts (etcd,
// kube-apiserver), then containerd (the Debian package's binary, with its root, state and socket
// under DIR), kube-controller-manager, kube-scheduler, a kubelet on that containerd and
// kube-proxy. Pods get addresses of podCIDR on the bridge nodeBridge, which carries the node's
// address; nothing is routed off the machine. No image can be pulled: the pause and http-server
// images are written from the static binaries that build.sh puts next to kube-harness and
// imported into containerd.

const (
	clusterStateFile = "cluster.json"
	nodeName         = "kube-harness-node"
	nodeBridge       = "kh-cni0"
	podCIDR          = "10.244.0.0/24"
	// nodeIP is the bridge's address: the kubelet refuses a loopback node IP, and the bridge is
	// the one interface of the machine that the cluster owns.
	nodeIP          = "10.244.0.1"
	nodeIPPrefixLen = 24
	// serviceIPv4CIDR is the IPv4 half of the API server's --service-cluster-ip-range.
	serviceIPv4CIDR = "10.96.0.0/16"
	cniBinDir       = "/usr/lib/cni"
	// PauseImage and HTTPServerImage are the images `cluster up` imports; pods name them with
	// imagePullPolicy: Never.
	pauseImage      = "localhost/kube-harness/pause:1"
	httpServerImage = "localhost/kube-harness/http-server:1"
	// nodeReadyTimeout bounds the wait for the kubelet's Node to be Ready.
	nodeReadyTimeout = 3 * time.Minute
)

// clusterComponents are the processes `cluster up` starts after etcd and the API server, in
// start order; `cluster down` stops them in reverse.
var clusterComponents = []string{"containerd", "api-forwarder", "controller-manager", "scheduler", "kubelet", "kube-proxy"}

// clusterState is DIR/cluster.json: what `cluster up` chose, read by the component processes.
type clusterState struct {
	Node                  string `json:"node"`
	NodeIP                string `json:"nodeIP"`
	PodCIDR               string `json:"podCIDR"`
	ProxyMode             string `json:"proxyMode"`
	EndpointControllers   bool   `json:"endpointControllers"`
	ControllerManagerPort int    `json:"controllerManagerPort"`
	SchedulerPort         int    `json:"schedulerPort"`
	KubeletPort           int    `json:"kubeletPort"`
	KubeletHealthzPort    int    `json:"kubeletHealthzPort"`
	ProxyHealthzPort      int    `json:"proxyHealthzPort"`
	ProxyMetricsPort      int    `json:"proxyMetricsPort"`
}

func readClusterState(dir string) (clusterState, error) {
	var state clusterState
	data, err := os.ReadFile(filepath.Join(dir, clusterStateFile))
	if err != nil {
		return state, fmt.Errorf("reading %s (is it a directory made by `kube-harness cluster up`?): %w", dir, err)
	}
	return state, json.Unmarshal(data, &state)
}

func componentKubeconfig(name string) string { return name + ".kubeconfig" }

func containerdSocket(abs string) string { return filepath.Join(abs, "containerd", "containerd.sock") }

func runCluster(args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("expected `cluster up` or `cluster down`\n\n%s", usage)
	}
	switch args[0] {
	case "up":
		flags := flag.NewFlagSet("cluster up", flag.ContinueOnError)
		endpointControllers := flags.Bool("endpoint-controllers", false,
			"run upstream's endpoints and EndpointSlice controllers in kube-controller-manager")
		proxyMode := flags.String("proxy-mode", "nftables", "kube-proxy's mode: nftables or iptables")
		if err := flags.Parse(args[1:]); err != nil {
			return err
		}
		if flags.NArg() != 1 {
			return fmt.Errorf("expected one argument, the state directory\n\n%s", usage)
		}
		return clusterUp(flags.Arg(0), *endpointControllers, *proxyMode)
	case "down":
		return withDir(args[1:], clusterDown)
	}
	return fmt.Errorf("unknown cluster command %q\n\n%s", args[0], usage)
}

func clusterUp(dir string, endpointControllers bool, proxyMode string) error {
	start := time.Now()
	if proxyMode != "nftables" && proxyMode != "iptables" {
		return fmt.Errorf("--proxy-mode must be nftables or iptables, not %q", proxyMode)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := checkNodePrerequisites(self); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	for _, name := range clusterComponents {
		if pid, err := readPID(abs, name); err == nil && ownComponent(pid, abs, name) {
			return fmt.Errorf("%s already runs in %s (pid %d); run `kube-harness cluster down %s` first", name, abs, pid, abs)
		}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(abs, advertiseFile), []byte(nodeIP), 0o600); err != nil {
		return err
	}
	if err := up(abs); err != nil {
		return err
	}
	ports, err := readPorts(abs)
	if err != nil {
		return err
	}
	state := clusterState{Node: nodeName, NodeIP: nodeIP, PodCIDR: podCIDR, ProxyMode: proxyMode, EndpointControllers: endpointControllers}
	for _, port := range []*int{&state.ControllerManagerPort, &state.SchedulerPort, &state.KubeletPort,
		&state.KubeletHealthzPort, &state.ProxyHealthzPort, &state.ProxyMetricsPort} {
		if *port, err = procs.FreePort(); err != nil {
			return fmt.Errorf("finding a free port: %w", err)
		}
	}
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(abs, clusterStateFile), data, 0o600); err != nil {
		return err
	}
	// Each component its own identity, as kubeadm gives them, so that the Node authorizer and
	// NodeRestriction see the kubelet as the node it is and RBAC's bootstrap roles apply.
	identities := []struct{ name, user, group string }{
		{"controller-manager", "system:kube-controller-manager", ""},
		{"scheduler", "system:kube-scheduler", ""},
		{"kubelet", "system:node:" + nodeName, "system:nodes"},
		{"kube-proxy", "system:kube-proxy", ""},
	}
	for _, id := range identities {
		var groups []string
		if id.group != "" {
			groups = []string{id.group}
		}
		if err := writeClientCert(abs, id.name, id.user, groups); err != nil {
			return err
		}
		if err := writeKubeconfigFor(abs, ports.APIServer, componentKubeconfig(id.name), id.name, id.name+".crt", id.name+".key"); err != nil {
			return err
		}
	}

	if err := ensureBridge(); err != nil {
		return err
	}
	if err := startContainerd(abs); err != nil {
		return err
	}
	if err := importImages(abs, self); err != nil {
		return err
	}
	phase("containerd ready, images imported", start)
	// The bridge carries nodeIP: pods reach the API server through it.
	if _, err := startServer(abs, "api-forwarder"); err != nil {
		return err
	}

	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		// The controller-manager and scheduler serve /healthz with a certificate they make up at
		// start; the probe only asks a loopback port whether they are up.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback health probe
	}}
	for _, component := range []struct {
		name string
		url  string
	}{
		{"controller-manager", fmt.Sprintf("https://127.0.0.1:%d/healthz", state.ControllerManagerPort)},
		{"scheduler", fmt.Sprintf("https://127.0.0.1:%d/healthz", state.SchedulerPort)},
	} {
		process, err := startServer(abs, component.name)
		if err != nil {
			return err
		}
		if err := waitHealthy(abs, component.name, process, probe, component.url); err != nil {
			return err
		}
	}
	phase("controller-manager and scheduler healthy", start)

	kubeletProcess, err := startServer(abs, "kubelet")
	if err != nil {
		return err
	}
	if err := waitNodeReady(abs, kubeletProcess); err != nil {
		return err
	}
	phase("node Ready", start)
	proxyProcess, err := startServer(abs, "kube-proxy")
	if err != nil {
		return err
	}
	if err := waitHealthy(abs, "kube-proxy", proxyProcess, http.DefaultClient,
		fmt.Sprintf("http://127.0.0.1:%d/healthz", state.ProxyHealthzPort)); err != nil {
		return err
	}
	phase("kube-proxy healthy", start)
	fmt.Printf("kube-harness: cluster up in %s: node %s (%s), pods on %s (%s), kube-proxy %s, upstream endpoint controllers %v; kubeconfig %s\n",
		time.Since(start).Round(100*time.Millisecond), nodeName, nodeIP, podCIDR, nodeBridge, proxyMode,
		endpointControllers, filepath.Join(abs, kubeconfigFile))
	return nil
}

func phase(what string, start time.Time) {
	fmt.Printf("kube-harness: %s (%s)\n", what, time.Since(start).Round(100*time.Millisecond))
}

// checkNodePrerequisites names every missing program at once, with the Debian package that has
// it, rather than failing on the first at some later step.
func checkNodePrerequisites(self string) error {
	var missing []string
	for program, pkg := range map[string]string{
		"containerd": "containerd", "containerd-shim-runc-v2": "containerd", "ctr": "containerd",
		"runc": "runc", "nft": "nftables", "iptables": "iptables", "ip": "iproute2",
	} {
		if _, err := exec.LookPath(program); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", program, pkg))
		}
	}
	for _, plugin := range []string{"bridge", "host-local", "loopback"} {
		if _, err := os.Stat(filepath.Join(cniBinDir, plugin)); err != nil {
			missing = append(missing, fmt.Sprintf("%s/%s (Debian package containernetworking-plugins)", cniBinDir, plugin))
		}
	}
	for _, image := range []string{"pause", "http-server"} {
		if _, err := os.Stat(self + "-" + image); err != nil {
			missing = append(missing, fmt.Sprintf("%s-%s (built by build.sh next to kube-harness)", self, image))
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return fmt.Errorf("the cluster needs: %s", strings.Join(missing, ", "))
	}
	return nil
}

// ensureBridge creates the pods' bridge with the node's address, so that the kubelet has its
// node IP before the first pod exists (the CNI bridge plugin would otherwise create it then).
func ensureBridge() error {
	if _, err := os.Stat("/sys/class/net/" + nodeBridge); err != nil {
		if err := run("ip", "link", "add", nodeBridge, "type", "bridge"); err != nil {
			return err
		}
	}
	address := fmt.Sprintf("%s/%d", nodeIP, nodeIPPrefixLen)
	out, err := exec.Command("ip", "-o", "addr", "show", "dev", nodeBridge).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip addr show dev %s: %v: %s", nodeBridge, err, out)
	}
	if !strings.Contains(string(out), " "+address+" ") {
		if err := run("ip", "addr", "add", address, "dev", nodeBridge); err != nil {
			return err
		}
	}
	return run("ip", "link", "set", nodeBridge, "up")
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// containerdConfig is containerd 1.6's (Debian bookworm's) configuration, version 2: everything
// it keeps under DIR/containerd, the CRI plugin on the cgroupfs driver (no systemd), the pause
// image imported by `cluster up` as the sandbox image, and the pods' network from
// DIR/containerd/net.d. restrict_oom_score_adj: the harness machines' root lacks
// CAP_SYS_RESOURCE, so runc cannot lower a container's oom_score_adj below containerd's own (the
// kubelet asks -998 for sandboxes) and every sandbox failed with "failed to update
// /proc/self/oom_score_adj: Permission denied"; restricted, containerd asks no lower than its own.
const containerdConfig = `version = 2
root = "{{dir}}/root"
state = "{{dir}}/state"
[grpc]
  address = "{{dir}}/containerd.sock"
[ttrpc]
  address = "{{dir}}/containerd.sock.ttrpc"
[debug]
  address = "{{dir}}/debug.sock"
[plugins."io.containerd.internal.v1.opt"]
  path = "{{dir}}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{pause}}"
  enable_selinux = false
  restrict_oom_score_adj = true
  disable_apparmor = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{cniBin}}"
    conf_dir = "{{dir}}/net.d"
`

// cniConfig puts pods on nodeBridge with addresses from podCIDR; host-local keeps its leases
// under DIR so that they go with the directory. Pods get a route to the Service range through the
// node (kube-proxy's rules on the node translate ClusterIPs) and no default route, and nothing
// is masqueraded: pods only talk to the machine. (isGateway alone gives the bridge the gateway
// address but no route in the pod: a pod's connection to a ClusterIP was refused at once.)
const cniConfig = `{
  "cniVersion": "0.4.0",
  "name": "kube-harness",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "{{bridge}}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "{{podCIDR}}", "gateway": "{{nodeIP}}"}]],
        "routes": [{"dst": "{{serviceCIDR}}", "gw": "{{nodeIP}}"}],
        "dataDir": "{{dir}}/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`

func startContainerd(abs string) error {
	dir := filepath.Join(abs, "containerd")
	if err := os.MkdirAll(filepath.Join(dir, "net.d"), 0o755); err != nil {
		return err
	}
	replace := strings.NewReplacer("{{dir}}", dir, "{{pause}}", pauseImage, "{{cniBin}}", cniBinDir,
		"{{bridge}}", nodeBridge, "{{podCIDR}}", podCIDR, "{{nodeIP}}", nodeIP,
		"{{serviceCIDR}}", serviceIPv4CIDR)
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(replace.Replace(containerdConfig)), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "net.d", "10-kube-harness.conflist"), []byte(replace.Replace(cniConfig)), 0o644); err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(abs, "containerd.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	command := exec.Command("containerd", "--config", config)
	command.Stdout = logFile
	command.Stderr = logFile
	command.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := command.Start(); err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	if err := os.WriteFile(pidPath(abs, "containerd"), []byte(strconv.Itoa(command.Process.Pid)+"\n"), 0o600); err != nil {
		_ = command.Process.Kill()
		return err
	}
	go func() { _ = command.Wait() }()
	return poll(upTimeout, func() (bool, error) {
		if !procs.Alive(command.Process.Pid) {
			return false, fmt.Errorf("containerd exited during start; the end of its log:\n%s", logTail(abs, "containerd"))
		}
		return exec.Command("ctr", "--address", containerdSocket(abs), "version").Run() == nil, nil
	})
}

// importImages writes the pause and http-server images as OCI archives under DIR/images and
// imports them into containerd's k8s.io namespace, where the CRI plugin finds them.
func importImages(abs, self string) error {
	dir := filepath.Join(abs, "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, image := range []ociImage{
		{Name: pauseImage, Binary: self + "-pause", Entrypoint: "pause"},
		{Name: httpServerImage, Binary: self + "-http-server", Entrypoint: "http-server"},
	} {
		archive := filepath.Join(dir, image.Entrypoint+".oci.tar")
		if err := writeOCIArchive(image, archive); err != nil {
			return err
		}
		if err := run("ctr", "--address", containerdSocket(abs), "-n", "k8s.io", "images", "import", archive); err != nil {
			return err
		}
	}
	return nil
}

// waitNodeReady polls the API server until the kubelet's Node reports Ready.
func waitNodeReady(abs string, kubelet *os.Process) error {
	config, err := clientcmd.BuildConfigFromFlags("", filepath.Join(abs, kubeconfigFile))
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	last := "no Node yet"
	err = poll(nodeReadyTimeout, func() (bool, error) {
		if !procs.Alive(kubelet.Pid) {
			return false, fmt.Errorf("kubelet exited during start; the end of its log:\n%s", logTail(abs, "kubelet"))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		for _, condition := range node.Status.Conditions {
			if condition.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s %s: %s", condition.Status, condition.Reason, condition.Message)
				return condition.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s: %w (last: %s); the end of the kubelet's log:\n%s", nodeName, err, last, logTail(abs, "kubelet"))
	}
	return nil
}

// poll calls check every 200ms until it reports done or an error, or timeout passes.
func poll(timeout time.Duration, check func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not done within %v", timeout)
		}
		<-ticker.C
	}
}

// ownComponent reports whether pid is still the named process of the cluster in abs:
// `kube-harness NAME ABS` for the components, containerd with ABS's configuration.
func ownComponent(pid int, abs, name string) bool {
	if name != "containerd" {
		return ownProcess(pid, abs)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	return strings.Contains(string(cmdline), filepath.Join(abs, "containerd", "config.toml"))
}

// clusterDown stops the node components, removes every pod sandbox through the CRI (which stops
// the containers and releases their network through CNI) while containerd still runs, stops
// containerd, then etcd and the API server, and removes what the cluster added to the machine:
// kube-proxy's rules, the bridge and the mounts under DIR.
func clusterDown(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var failures []string
	stopComponent := func(name string) {
		pid, err := readPID(abs, name)
		if errors.Is(err, os.ErrNotExist) {
			return
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", name, err))
			return
		}
		if ownComponent(pid, abs, name) {
			if err := stop(pid); err != nil {
				failures = append(failures, fmt.Sprintf("%s (pid %d): %v", name, pid, err))
				return
			}
		}
		_ = os.Remove(pidPath(abs, name))
	}
	for i := len(clusterComponents) - 1; i >= 1; i-- {
		stopComponent(clusterComponents[i])
	}
	if pid, err := readPID(abs, "containerd"); err == nil && ownComponent(pid, abs, "containerd") {
		if err := removeSandboxes(abs); err != nil {
			failures = append(failures, "removing the pods: "+err.Error())
		}
	}
	stopComponent("containerd")
	if err := down(abs); err != nil {
		failures = append(failures, err.Error())
	}
	if state, err := readClusterState(abs); err == nil {
		for _, family := range []string{"ip", "ip6"} {
			// kube-proxy's nftables mode keeps all of its rules in these two tables.
			_ = exec.Command("nft", "delete", "table", family, "kube-proxy").Run()
		}
		if state.ProxyMode == "iptables" {
			self, _ := os.Executable()
			if out, err := exec.Command(self, "kube-proxy", abs, "--cleanup").CombinedOutput(); err != nil {
				failures = append(failures, fmt.Sprintf("kube-proxy --cleanup: %v: %s", err, out))
			}
		}
	}
	if _, err := os.Stat("/sys/class/net/" + nodeBridge); err == nil {
		if err := run("ip", "link", "delete", nodeBridge); err != nil {
			failures = append(failures, err.Error())
		}
	}
	if err := unmountUnder(abs); err != nil {
		failures = append(failures, err.Error())
	}
	// A later `up DIR` alone keeps the API server to loopback.
	_ = os.Remove(filepath.Join(abs, advertiseFile))
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// removeSandboxes stops and removes every pod sandbox of DIR's containerd through the CRI, as
// the kubelet would on deleting the pods: the sandboxes' containers die and CNI releases their
// addresses and veths. A stopped containerd would leave the containers running under their
// shims.
func removeSandboxes(abs string) error {
	conn, err := grpc.NewClient("unix://"+containerdSocket(abs), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	runtime := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var failures []string
	for _, sandbox := range list.Items {
		if _, err := runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
			failures = append(failures, err.Error())
			continue
		}
		if _, err := runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandbox.Id}); err != nil {
			failures = append(failures, err.Error())
		}
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}

// unmountUnder unmounts every mount point under abs, deepest first: the kubelet's volume mounts
// and containerd's overlay and shm mounts outlive the processes that made them, and would keep
// the directory from being removed.
func unmountUnder(abs string) error {
	file, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer file.Close()
	var points []string
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) > 4 && (fields[4] == abs || strings.HasPrefix(fields[4], abs+"/")) {
			points = append(points, fields[4])
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	var failures []string
	for _, point := range points {
		if err := syscall.Unmount(point, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			failures = append(failures, fmt.Sprintf("unmounting %s: %v", point, err))
		}
	}
	if len(failures) > 0 {
		return errors.New(strings.Join(failures, "; "))
	}
	return nil
}
