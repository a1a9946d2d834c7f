package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The files of a harness directory that the API server reads and clients use.
const (
	caCertFile     = "ca.crt"
	caKeyFile      = "ca.key"
	serverCertFile = "apiserver.crt"
	serverKeyFile  = "apiserver.key"
	adminCertFile  = "admin.crt"
	adminKeyFile   = "admin.key"
	saKeyFile      = "sa.key"
	saPubFile      = "sa.pub"
	kubeconfigFile = "kubeconfig"
)

// certLifetime covers any test run; the directory is thrown away afterwards.
const certLifetime = 7 * 24 * time.Hour

// writePKI creates a CA and, signed by it, the API server's serving certificate (127.0.0.1,
// ::1, localhost and the in-cluster names), an admin client certificate in system:masters, and
// the service-account signing key pair.
func writePKI(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Minute)
	caTemplate := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kube-harness-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caCert, err := sign(caTemplate, &caKey.PublicKey, caTemplate, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(dir, caCertFile, "CERTIFICATE", caCert.Raw); err != nil {
		return err
	}
	// Kept so that `cluster up` can sign the node components' client certificates afterwards.
	if err := writeKey(dir, caKeyFile, caKey); err != nil {
		return err
	}

	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now,
		NotAfter:    now.Add(certLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		// nodeIP: where api-forwarder relays to the API server in a cluster.
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(serviceIPv4), net.ParseIP(nodeIP)},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	if err := writeLeaf(dir, serverCertFile, serverKeyFile, server, caCert, caKey); err != nil {
		return err
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-harness-admin", Organization: []string{"system:masters"}},
		NotBefore:   now,
		NotAfter:    now.Add(certLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if err := writeLeaf(dir, adminCertFile, adminKeyFile, admin, caCert, caKey); err != nil {
		return err
	}

	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(dir, saKeyFile, saKey); err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writePEM(dir, saPubFile, "PUBLIC KEY", pub)
}

func sign(template *x509.Certificate, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	template.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, parentKey)
	if err != nil {
		return nil, fmt.Errorf("signing %q: %w", template.Subject.CommonName, err)
	}
	return x509.ParseCertificate(der)
}

func writeLeaf(dir, certName, keyName string, template, ca *x509.Certificate, caKey crypto.Signer) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	cert, err := sign(template, &key.PublicKey, ca, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(dir, certName, "CERTIFICATE", cert.Raw); err != nil {
		return err
	}
	return writeKey(dir, keyName, key)
}

func writeKey(dir, name string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(dir, name, "EC PRIVATE KEY", der)
}

func writePEM(dir, name, kind string, der []byte) error {
	data := pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
	return os.WriteFile(filepath.Join(dir, name), data, 0o600)
}

// writeKubeconfig writes DIR/kubeconfig for the admin certificate, with absolute paths so that
// the file works from any working directory.
func writeKubeconfig(dir string, port int) error {
	return writeKubeconfigFor(dir, port, kubeconfigFile, "admin", adminCertFile, adminKeyFile)
}

// writeKubeconfigFor writes DIR/NAME for the client certificate certFile and keyFile of DIR,
// under the user entry userEntry.
func writeKubeconfigFor(dir string, port int, name, userEntry, certFile, keyFile string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	config := clientcmdapi.NewConfig()
	config.Clusters["kube-harness"] = &clientcmdapi.Cluster{
		Server:               fmt.Sprintf("https://127.0.0.1:%d", port),
		CertificateAuthority: filepath.Join(abs, caCertFile),
	}
	config.AuthInfos[userEntry] = &clientcmdapi.AuthInfo{
		ClientCertificate: filepath.Join(abs, certFile),
		ClientKey:         filepath.Join(abs, keyFile),
	}
	config.Contexts["kube-harness"] = &clientcmdapi.Context{Cluster: "kube-harness", AuthInfo: userEntry}
	config.CurrentContext = "kube-harness"
	return clientcmd.WriteToFile(*config, filepath.Join(dir, name))
}

// writeClientCert signs, with DIR's CA, a client certificate for user in groups and writes it
// to DIR/NAME.crt and DIR/NAME.key.
func writeClientCert(dir, name, user string, groups []string) error {
	caPEM, err := os.ReadFile(filepath.Join(dir, caCertFile))
	if err != nil {
		return err
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, caKeyFile))
	if err != nil {
		return err
	}
	certBlock, _ := pem.Decode(caPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return fmt.Errorf("no PEM block in %s or %s", caCertFile, caKeyFile)
	}
	ca, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return err
	}
	caKey, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Minute)
	template := &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		NotBefore:   now,
		NotAfter:    now.Add(certLifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return writeLeaf(dir, name+".crt", name+".key", template, ca, caKey)
}
