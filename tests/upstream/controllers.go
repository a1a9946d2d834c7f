package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime/pprof"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/endpoint"
	"k8s.io/kubernetes/pkg/controller/endpointslice"

	"weir/tests/upstream/internal/harness"
)

// kube-controller-manager's defaults for the two controllers (its --concurrent-endpoint-syncs,
// --concurrent-service-endpoint-syncs, --max-endpoints-per-slice, the batch periods) and for its
// client (--kube-api-qps, --kube-api-burst, --kube-api-content-type).
const (
	kcmWorkers              = 5
	kcmMaxEndpointsPerSlice = 100
	kcmQPS                  = 20
	kcmBurst                = 30
	kcmContentType          = "application/vnd.kubernetes.protobuf"
	// The range kube-controller-manager accepts for --max-endpoints-per-slice.
	minMaxEndpointsPerSlice = 1
	maxMaxEndpointsPerSlice = 1000
	// kube-controller-manager's --min-resync-period default
	// (k8s.io/controller-manager/config/v1alpha1/defaults.go).
	kcmMinResyncPeriod = 12 * time.Hour
)

// kcmResyncPeriod is the shared informers' resync period as kube-controller-manager draws it
// (cmd/kube-controller-manager/app/controllermanager.go, ResyncPeriod): the minimum times a
// random factor in [1, 2), so that controllers do not resync in lock-step.
func kcmResyncPeriod() time.Duration {
	return time.Duration(float64(kcmMinResyncPeriod) * (rand.Float64() + 1))
}

// trimManagedFields drops managedFields from every object the shared informers cache, as
// kube-controller-manager's informer transform does (cmd/kube-controller-manager/app/
// controllermanager.go, CreateControllerContext): the controllers never read them, and they
// are often the largest part of an object.
func trimManagedFields(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil && accessor.GetManagedFields() != nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

// runControllers runs upstream's endpoints controller (pkg/controller/endpoint) and EndpointSlice
// controller (pkg/controller/endpointslice) in this process until SIGTERM or SIGINT.
func runControllers(args []string) error {
	flags := flag.NewFlagSet("controllers", flag.ContinueOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the API server (required)")
	namespace := flags.String("namespace", "", "namespace whose Services, Pods, Endpoints and EndpointSlices the controllers watch; empty for all")
	qps := flags.Float64("qps", kcmQPS, "client queries per second, as kube-controller-manager's --kube-api-qps")
	burst := flags.Int("burst", kcmBurst, "client burst, as kube-controller-manager's --kube-api-burst")
	workers := flags.Int("workers", kcmWorkers, "workers of each controller, as --concurrent-endpoint-syncs and --concurrent-service-endpoint-syncs")
	maxPerSlice := flags.Int("max-endpoints-per-slice", kcmMaxEndpointsPerSlice,
		fmt.Sprintf("most endpoints in one EndpointSlice, as kube-controller-manager's flag of that name (%d to %d)", minMaxEndpointsPerSlice, maxMaxEndpointsPerSlice))
	endpointsBatch := flags.Duration("endpoint-updates-batch-period", 0,
		"how long the Endpoints controller delays pod-driven syncs to coalesce them, as kube-controller-manager's flag of that name")
	slicesBatch := flags.Duration("endpointslice-updates-batch-period", 0,
		"how long the EndpointSlice controller delays pod-driven syncs (and slice-driven ones beyond 1s), as kube-controller-manager's flag of that name")
	cpuProfile := flags.String("cpuprofile", "", "write a CPU profile (pprof) of the controllers to this file, from the start until SIGTERM or SIGINT")
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	flags.Var(klogFlags.Lookup("v").Value, "v", "log verbosity (klog)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	if *kubeconfig == "" {
		return errors.New("--kubeconfig is required")
	}
	if *qps <= 0 || *burst <= 0 || *workers <= 0 {
		return errors.New("--qps, --burst and --workers must be positive")
	}
	if *maxPerSlice < minMaxEndpointsPerSlice || *maxPerSlice > maxMaxEndpointsPerSlice {
		return fmt.Errorf("--max-endpoints-per-slice must be between %d and %d, not %d", minMaxEndpointsPerSlice, maxMaxEndpointsPerSlice, *maxPerSlice)
	}
	if err := nonNegative(map[string]time.Duration{"--endpoint-updates-batch-period": *endpointsBatch,
		"--endpointslice-updates-batch-period": *slicesBatch}); err != nil {
		return err
	}

	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", *kubeconfig, err)
	}
	config.QPS = float32(*qps)
	config.Burst = *burst
	config.ContentType = kcmContentType
	// kube-controller-manager asks for uncompressed responses
	// (cmd/kube-controller-manager/app/options/options.go, Config): on a fast network gzip costs
	// both sides CPU and saves little.
	config.DisableCompression = true
	// kube-controller-manager gives its shared informers a client and each controller a client
	// of its own, each with its own QPS/burst bucket; one clientset per role does the same here.
	informerClient, err := clientFor(config, "shared-informers")
	if err != nil {
		return err
	}
	endpointsClient, err := clientFor(config, "endpoint-controller")
	if err != nil {
		return err
	}
	slicesClient, err := clientFor(config, "endpointslice-controller")
	if err != nil {
		return err
	}

	if *cpuProfile != "" {
		profile, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(profile); err != nil {
			profile.Close()
			return err
		}
		// Written out when the controllers stop (a return from here), the way a benchmark
		// stops them: SIGTERM.
		defer func() {
			pprof.StopCPUProfile()
			profile.Close()
		}()
	}

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())

	// Nodes are cluster-scoped, so the namespace option leaves their informer cluster-wide.
	factory := informers.NewSharedInformerFactoryWithOptions(informerClient, kcmResyncPeriod(),
		informers.WithNamespace(*namespace), informers.WithTransform(trimManagedFields))
	core := factory.Core().V1()
	endpoints := endpoint.NewEndpointController(ctx, core.Pods(), core.Services(), core.Endpoints(), endpointsClient, *endpointsBatch)
	slices := endpointslice.NewController(ctx, core.Pods(), core.Services(), core.Nodes(),
		factory.Discovery().V1().EndpointSlices(), int32(*maxPerSlice), slicesClient, *slicesBatch)
	factory.Start(ctx.Done())

	var running sync.WaitGroup
	running.Go(func() { endpoints.Run(ctx, *workers) })
	running.Go(func() { slices.Run(ctx, *workers) })
	// The controllers start their workers once these caches are synced; the line tells a driver
	// (the conformance run) that changes from now on are seen.
	for informer, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return fmt.Errorf("the %v cache did not sync", informer)
		}
	}
	fmt.Fprintf(os.Stderr, "%s (namespace %q)\n", harness.SyncedLine, *namespace)
	<-ctx.Done()
	running.Wait()
	factory.Shutdown()
	return nil
}

// clientFor returns a clientset with its own rate limiter (client-go gives each clientset one
// bucket built from the config's QPS and burst), named role in its user agent.
func clientFor(config *rest.Config, role string) (*kubernetes.Clientset, error) {
	own := rest.CopyConfig(config)
	own.UserAgent = "kube-harness/" + role
	return kubernetes.NewForConfig(own)
}

// nonNegative refuses a negative duration among flags (flag name to value).
func nonNegative(flags map[string]time.Duration) error {
	for name, d := range flags {
		if d < 0 {
			return fmt.Errorf("%s must not be negative, not %v", name, d)
		}
	}
	return nil
}
