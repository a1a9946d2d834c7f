package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
)

// Pods reach the API server as in any cluster: the `kubernetes` Service's ClusterIP, which
// kube-proxy sends to the address the API server advertises. The API server listens on
// loopback only, where no pod can reach it; `kube-harness api-forwarder DIR` relays the node's
// address (on the pods' bridge) to it, port for port, so that the advertised endpoint
// (nodeIP:port) leads to the API server without exposing it on any other interface of the
// machine. TLS passes through: the serving certificate names the Service's ClusterIP.

// advertiseFile, in DIR, holds the address the API server advertises; `cluster up` writes it
// before the API server starts, `up` alone does not (and the API server keeps to loopback).
const advertiseFile = "advertise-address"

// advertisedAddress is the address `cluster up` asked the API server of dir to advertise, or ""
// for `up` alone.
func advertisedAddress(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, advertiseFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	address := string(data)
	if net.ParseIP(address) == nil {
		return "", fmt.Errorf("%s/%s: %q is not an IP address", dir, advertiseFile, address)
	}
	return address, nil
}

func runAPIForwarder(dir string) error {
	ports, err := readPorts(dir)
	if err != nil {
		return err
	}
	address, err := advertisedAddress(dir)
	if err != nil {
		return err
	}
	if address == "" {
		return fmt.Errorf("%s has no %s: the forwarder is part of `cluster up`", dir, advertiseFile)
	}
	port := strconv.Itoa(ports.APIServer)
	listener, err := net.Listen("tcp", net.JoinHostPort(address, port))
	if err != nil {
		return err
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		listener.Close()
	}()
	target := net.JoinHostPort("127.0.0.1", port)
	fmt.Printf("kube-harness api-forwarder: %s -> %s\n", listener.Addr(), target)
	for {
		client, err := listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go relay(client, target)
	}
}

// relay copies both ways between client and a new connection to target until either side
// closes.
func relay(client net.Conn, target string) {
	defer client.Close()
	server, err := net.Dial("tcp", target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kube-harness api-forwarder: %v\n", err)
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	pipe := func(to, from net.Conn) {
		_, _ = io.Copy(to, from)
		// Half-close, so the other direction can finish what it is sending.
		if tcp, ok := to.(*net.TCPConn); ok {
			_ = tcp.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}
