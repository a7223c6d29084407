// Command push uploads the image of an OCI image-layout archive (what
// scripts/containerd/start.sh builds as build/pause.tar) to a registry over
// plain HTTP with the OCI distribution API: for each blob (config and
// layers) a HEAD, and when it is missing a POST to open an upload and a
// monolithic PUT; then a PUT of the manifest under the tag. Basic
// authentication, user from -user, password from the environment variable
// named by -password-env (never on the command line, never printed).
// Standard library only.
//
// -label KEY=VALUE adds a label to the image's config, so that the pushed
// image is a different image (another config digest, the runtime's image
// ID) from the archive's: a test that removes it from a runtime then
// leaves the archive's image (imported there under its own name) alone.
//
//	REG_PASSWORD=... push -archive pause.tar -registry 127.0.0.1:15000 \
//	    -repo podlife/private -tag 1.0 -user podlife -password-env REG_PASSWORD \
//	    -label org.podlife.test=private-registry
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

type manifest struct {
	MediaType string       `json:"mediaType"`
	Config    descriptor   `json:"config"`
	Layers    []descriptor `json:"layers"`
}

type index struct {
	Manifests []descriptor `json:"manifests"`
}

func main() {
	archive := flag.String("archive", "", "OCI image-layout tar archive")
	registry := flag.String("registry", "", "registry host:port (plain HTTP)")
	repo := flag.String("repo", "", "repository, e.g. podlife/private")
	tag := flag.String("tag", "", "tag to push the manifest as")
	user := flag.String("user", "", "user for basic authentication (none: anonymous)")
	pwEnv := flag.String("password-env", "REG_PASSWORD", "environment variable holding the password")
	label := flag.String("label", "", "KEY=VALUE label to add to the image config (a distinct image)")
	flag.Parse()
	if *archive == "" || *registry == "" || *repo == "" || *tag == "" {
		log.Fatal("push: -archive, -registry, -repo and -tag are required")
	}
	files, err := readArchive(*archive)
	if err != nil {
		log.Fatalf("push: %v", err)
	}
	p := &pusher{
		base:   "http://" + *registry + "/v2/" + *repo,
		user:   *user,
		pw:     os.Getenv(*pwEnv),
		client: &http.Client{Timeout: 60 * time.Second},
	}
	d, err := p.push(files, *tag, *label)
	if err != nil {
		log.Fatalf("push: %v", err)
	}
	fmt.Println(d)
}

// readArchive returns the archive's regular files by name.
func readArchive(path string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading %s in %s: %w", h.Name, path, err)
		}
		out[strings.TrimPrefix(h.Name, "./")] = b
	}
}

type pusher struct {
	base     string
	user, pw string
	client   *http.Client
}

func blob(files map[string][]byte, d descriptor) ([]byte, error) {
	alg, hexd, ok := strings.Cut(d.Digest, ":")
	if !ok || alg != "sha256" {
		return nil, fmt.Errorf("unsupported digest %q", d.Digest)
	}
	b, ok := files["blobs/sha256/"+hexd]
	if !ok {
		return nil, fmt.Errorf("blob %s not in the archive", d.Digest)
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexd || int64(len(b)) != d.Size {
		return nil, fmt.Errorf("blob %s: digest or size does not match", d.Digest)
	}
	return b, nil
}

// push uploads the archive's only image manifest and its blobs, and
// returns the manifest's digest.
func (p *pusher) push(files map[string][]byte, tag, label string) (string, error) {
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		return "", fmt.Errorf("index.json: %w", err)
	}
	if len(idx.Manifests) != 1 {
		return "", fmt.Errorf("index.json lists %d manifests, want 1", len(idx.Manifests))
	}
	md := idx.Manifests[0]
	raw, err := blob(files, md)
	if err != nil {
		return "", err
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return "", fmt.Errorf("manifest %s: %w", md.Digest, err)
	}
	if m.MediaType == "" {
		m.MediaType = md.MediaType
	}
	config, err := blob(files, m.Config)
	if err != nil {
		return "", err
	}
	digest := md.Digest
	if label != "" {
		if config, err = addLabel(config, label); err != nil {
			return "", err
		}
		// The manifest again, with the new config's descriptor.
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return "", fmt.Errorf("manifest %s: %w", md.Digest, err)
		}
		doc["config"] = descriptor{MediaType: m.Config.MediaType, Digest: sha(config), Size: int64(len(config))}
		if raw, err = json.Marshal(doc); err != nil {
			return "", err
		}
		digest = sha(raw)
	}
	if err := p.pushBlob(sha(config), config); err != nil {
		return "", err
	}
	for _, d := range m.Layers {
		b, err := blob(files, d)
		if err != nil {
			return "", err
		}
		if err := p.pushBlob(d.Digest, b); err != nil {
			return "", err
		}
	}
	resp, err := p.do(http.MethodPut, p.base+"/manifests/"+tag, m.MediaType, raw)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("PUT manifest %s: %s", tag, status(resp))
	}
	if got := resp.Header.Get("Docker-Content-Digest"); got != "" && got != digest {
		return "", fmt.Errorf("PUT manifest %s: the registry stored %s, want %s", tag, got, digest)
	}
	return digest, nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// addLabel returns the image config with config.Labels[KEY] = VALUE.
func addLabel(config []byte, label string) ([]byte, error) {
	k, v, ok := strings.Cut(label, "=")
	if !ok || k == "" {
		return nil, fmt.Errorf("-label %q: want KEY=VALUE", label)
	}
	var doc map[string]any
	if err := json.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	c, _ := doc["config"].(map[string]any)
	if c == nil {
		c = map[string]any{}
		doc["config"] = c
	}
	labels, _ := c["Labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		c["Labels"] = labels
	}
	labels[k] = v
	return json.Marshal(doc)
}

func (p *pusher) pushBlob(digest string, b []byte) error {
	resp, err := p.do(http.MethodHead, p.base+"/blobs/"+digest, "", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	resp, err = p.do(http.MethodPost, p.base+"/blobs/uploads/", "", nil)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST blob upload: %s", status(resp))
	}
	base, _ := url.Parse(p.base)
	loc, err := base.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return fmt.Errorf("POST blob upload: no usable Location (%v)", err)
	}
	q := loc.Query()
	q.Set("digest", digest)
	loc.RawQuery = q.Encode()
	resp, err = p.do(http.MethodPut, loc.String(), "application/octet-stream", b)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("PUT blob %s: %s", digest, status(resp))
	}
	return nil
}

// do sends one request and reads its body into the response (closed).
func (p *pusher) do(method, u, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.ContentLength = int64(len(body))
	if p.user != "" {
		req.SetBasicAuth(p.user, p.pw)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

func status(resp *http.Response) string {
	b, _ := io.ReadAll(resp.Body)
	return strconv.Itoa(resp.StatusCode) + " " + strings.TrimSpace(string(b))
}
