package kubee2e

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"time"
)

// pki is the control plane's certificate authority, with the files it
// wrote under dir: ca.crt, and for each certificate NAME.crt and NAME.key.
type pki struct {
	dir    string
	caCert *x509.Certificate
	caKey  crypto.Signer
	// CA is the path of the CA certificate (PEM).
	CA string
}

// certPair is the files of one certificate and its key.
type certPair struct{ Cert, Key string }

// certLifetime is how long the suite's certificates are valid: a test run
// is minutes, and a clock a little off must not matter.
const certLifetime = 24 * time.Hour

// newPKI makes a CA (ECDSA P-256) named cn and writes ca.crt and ca.key
// into dir.
func newPKI(dir, cn string) (*pki, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir, caCert: cert, caKey: key, CA: filepath.Join(dir, "ca.crt")}
	if err := writePEM(p.CA, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	if err := writeKey(filepath.Join(dir, "ca.key"), key); err != nil {
		return nil, err
	}
	return p, nil
}

// certSpec says what a certificate is for.
type certSpec struct {
	// name is the file name stem (NAME.crt, NAME.key).
	name string
	// cn and orgs are the subject: for a client certificate, Kubernetes'
	// user name and groups.
	cn   string
	orgs []string
	// server and client are the extended key usages.
	server, client bool
	// dns and ips are a serving certificate's subject alternative names.
	dns []string
	ips []netip.Addr
}

// issue makes a key (ECDSA P-256) and a certificate for it signed by the CA.
func (p *pki) issue(s certSpec) (certPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certPair{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: s.cn, Organization: s.orgs},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(certLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		DNSNames:     s.dns,
	}
	for _, ip := range s.ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(ip.AsSlice()))
	}
	if s.server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if s.client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, key.Public(), p.caKey)
	if err != nil {
		return certPair{}, fmt.Errorf("certificate %s: %w", s.name, err)
	}
	c := certPair{Cert: filepath.Join(p.dir, s.name+".crt"), Key: filepath.Join(p.dir, s.name+".key")}
	if err := writePEM(c.Cert, "CERTIFICATE", der); err != nil {
		return certPair{}, err
	}
	if err := writeKey(c.Key, key); err != nil {
		return certPair{}, err
	}
	return c, nil
}

// clientCert issues a client certificate for the Kubernetes user cn in the
// groups orgs.
func (p *pki) clientCert(name, cn string, orgs ...string) (certPair, error) {
	return p.issue(certSpec{name: name, cn: cn, orgs: orgs, client: true})
}

// serviceAccountKey writes the service account token signing key (RSA
// 2048, as the apiserver's default signing algorithm RS256 needs) as
// NAME.key and its public key as NAME.pub.
func (p *pki) serviceAccountKey(name string) (certPair, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return certPair{}, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return certPair{}, err
	}
	c := certPair{Cert: filepath.Join(p.dir, name+".pub"), Key: filepath.Join(p.dir, name+".key")}
	if err := writePEM(c.Cert, "PUBLIC KEY", pub); err != nil {
		return certPair{}, err
	}
	if err := writeKey(c.Key, key); err != nil {
		return certPair{}, err
	}
	return c, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

func writeKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "PRIVATE KEY", der)
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

// writeKubeconfig writes a kubeconfig for server, trusting the CA, with
// the client certificate c, and returns its path.
func (p *pki) writeKubeconfig(name, server string, c certPair) (string, error) {
	path := filepath.Join(p.dir, name+".kubeconfig")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: %q
    certificate-authority: %q
users:
- name: %s
  user:
    client-certificate: %q
    client-key: %q
contexts:
- name: e2e
  context:
    cluster: e2e
    user: %s
current-context: e2e
`, server, p.CA, name, c.Cert, c.Key, name)
	return path, os.WriteFile(path, []byte(conf), 0o600)
}
