package main

import (
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// runEtcd serves etcd on the loopback ports recorded in DIR/ports.json until SIGTERM. Data lives
// in DIR/etcd with fsync off: the store is thrown away with the directory, and fsync on a busy
// CI disk would make every API write slow.
func runEtcd(dir string) error {
	ports, err := readPorts(dir)
	if err != nil {
		return err
	}
	cfg := embed.NewConfig()
	cfg.Name = "harness"
	cfg.Dir = filepath.Join(dir, "etcd")
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports.EtcdClient)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ports.EtcdPeer)}
	cfg.ListenClientUrls = []url.URL{client}
	cfg.AdvertiseClientUrls = []url.URL{client}
	cfg.ListenPeerUrls = []url.URL{peer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	// The metrics listener would take another port; the harness does not scrape it.
	cfg.ListenMetricsUrls = nil

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("starting etcd: %w", err)
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		return fmt.Errorf("etcd was not ready within 60s")
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-stop:
		return nil
	case err := <-server.Err():
		return fmt.Errorf("etcd: %w", err)
	}
}
