// Command http-server answers every HTTP request with the pod's hostname, so that a client of a
// Service can tell which endpoint answered. It is the workload image of the kube-harness
// cluster, built static (CGO_ENABLED=0) because nothing can be pulled there.
//
// GET /readyz is for a readiness probe: 200 until `POST /readyz?ready=false` (503 from then
// on), 200 again after `POST /readyz?ready=true`. A client that drives it changes the pod's
// readiness through the kubelet, as a real application does. / answers either way, as an
// application that stops taking new work still finishes what reaches it.
//
//	http-server [ADDR]   listen on ADDR (default :8080)
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	addr := ":8080"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	hostname, err := os.Hostname()
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, hostname)
	})
	var notReady atomic.Bool
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if notReady.Load() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("POST /readyz", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("ready") {
		case "true":
			notReady.Store(false)
		case "false":
			notReady.Store(true)
		default:
			http.Error(w, "expected ?ready=true or ?ready=false", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	server := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	// The kubelet stops a container with SIGTERM: shut down at once rather than wait for the
	// grace period's SIGKILL, so that deleting a pod is quick.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = server.Shutdown(shutdown)
	}()
	log.Printf("http-server %s listening on %s", hostname, addr)
	if err := server.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
