// Command pki writes the certificates and kubeconfigs of the one-node
// cluster (hack/node/cluster.sh): a CA, the API server's serving
// certificate, a client certificate and kubeconfig for the admin, the
// controller manager, the scheduler, kube-proxy and each node's kubelet,
// and the service account signing key. The names are the ones the
// default RBAC and the Node authorizer know (system:kube-controller-manager,
// system:node:<name> in system:nodes, ...), as kubeadm writes them.
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", "", "folder to write into")
	server := flag.String("server", "", "the API server's URL, for the kubeconfigs")
	ips := flag.String("apiserver-ips", "", "IP addresses the API server is reached at, comma-separated: its own and the kubernetes Service's")
	nodes := flag.String("nodes", "", "node names, comma-separated: a kubelet kubeconfig each")
	flag.Parse()
	if err := write(*dir, *server, split(*ips), split(*nodes)); err != nil {
		fmt.Fprintln(os.Stderr, "pki:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

type pair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func write(dir, server string, ips, nodes []string) error {
	if dir == "" || server == "" {
		return fmt.Errorf("--dir and --server are required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, err := issue(nil, x509.Certificate{Subject: pkix.Name{CommonName: "nhc-node-ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature})
	if err != nil {
		return err
	}
	if err := save(dir, "ca", ca); err != nil {
		return err
	}
	serving := x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, ip := range ips {
		parsed := net.ParseIP(ip)
		if parsed == nil {
			return fmt.Errorf("not an IP address: %q", ip)
		}
		serving.IPAddresses = append(serving.IPAddresses, parsed)
	}
	apiserver, err := issue(&ca, serving)
	if err != nil {
		return err
	}
	if err := save(dir, "apiserver", apiserver); err != nil {
		return err
	}
	clients := map[string][2]string{
		"admin":                   {"nhc-node-admin", "system:masters"},
		"apiserver-kubelet":       {"kube-apiserver-kubelet-client", "system:masters"},
		"kube-controller-manager": {"system:kube-controller-manager", ""},
		"kube-scheduler":          {"system:kube-scheduler", ""},
		"kube-proxy":              {"system:kube-proxy", ""},
	}
	for _, node := range nodes {
		clients["kubelet-"+node] = [2]string{"system:node:" + node, "system:nodes"}
	}
	for name, subject := range clients {
		template := x509.Certificate{Subject: pkix.Name{CommonName: subject[0]}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
		if subject[1] != "" {
			template.Subject.Organization = []string{subject[1]}
		}
		client, err := issue(&ca, template)
		if err != nil {
			return err
		}
		if err := save(dir, name, client); err != nil {
			return err
		}
		if err := kubeconfig(filepath.Join(dir, name+".kubeconfig"), server, ca, client); err != nil {
			return err
		}
	}
	// Service account tokens are signed with RSA, as kubeadm's are.
	sa, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&sa.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// issue makes a key and a certificate for it, signed by parent, or
// self-signed without one.
func issue(parent *pair, template x509.Certificate) (pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return pair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return pair{}, err
	}
	template.SerialNumber = serial
	template.NotBefore = time.Now().Add(-time.Hour)
	template.NotAfter = time.Now().Add(30 * 24 * time.Hour)
	if !template.IsCA {
		template.KeyUsage = x509.KeyUsageDigitalSignature
	}
	signer, signerKey := &template, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, &template, signer, &key.PublicKey, signerKey)
	if err != nil {
		return pair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return pair{cert, key}, err
}

func certPEM(p pair) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.cert.Raw})
}

func keyPEM(p pair) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(p.key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func save(dir, name string, p pair) error {
	key, err := keyPEM(p)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), certPEM(p), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name+".key"), key, 0o600)
}

func kubeconfig(path, server string, ca, client pair) error {
	key, err := keyPEM(client)
	if err != nil {
		return err
	}
	b64 := base64.StdEncoding.EncodeToString
	config := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: nhc-node
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %s
  user:
    client-certificate-data: %s
    client-key-data: %s
contexts:
- name: nhc-node
  context:
    cluster: nhc-node
    user: %s
current-context: nhc-node
`, server, b64(certPEM(ca)), client.cert.Subject.CommonName, b64(certPEM(client)), b64(key), client.cert.Subject.CommonName)
	return os.WriteFile(path, []byte(config), 0o600)
}
