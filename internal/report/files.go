package report

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// WriteFiles writes dir/stem.{json,md}, adding "-2", "-3"... to stem
// rather than overwrite an earlier report, then copies both to
// dir/<latest>.{json,md}; it creates dir if needed.
func WriteFiles(dir, stem, latest string, js, md []byte) (jsonPath, mdPath string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("bench: %w", err)
	}
	for i := 1; ; i++ {
		name := stem
		if i > 1 {
			name = fmt.Sprintf("%s-%d", stem, i)
		}
		jsonPath = filepath.Join(dir, name+".json")
		mdPath = filepath.Join(dir, name+".md")
		err := createNew(jsonPath, js)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("bench: %w", err)
		}
		if err := createNew(mdPath, md); err != nil {
			return "", "", fmt.Errorf("bench: %w", err)
		}
		break
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{latest + ".json", js}, {latest + ".md", md}} {
		if err := replaceFile(filepath.Join(dir, f.name), f.data); err != nil {
			return jsonPath, mdPath, fmt.Errorf("bench: %w", err)
		}
	}
	return jsonPath, mdPath, nil
}

// createNew writes a file that must not exist yet.
func createNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// replaceFile writes path atomically: a temporary file renamed over it.
func replaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// WriteBeside writes data beside the JSON report jsonPath (the same name,
// .html) and, atomically, as dir/<latest>.html; it returns the first path.
func WriteBeside(jsonPath, latest string, html []byte) (string, error) {
	path := strings.TrimSuffix(jsonPath, ".json") + ".html"
	if err := os.WriteFile(path, html, 0o644); err != nil {
		return "", fmt.Errorf("bench: %w", err)
	}
	if err := replaceFile(filepath.Join(filepath.Dir(jsonPath), latest+".html"), html); err != nil {
		return path, fmt.Errorf("bench: %w", err)
	}
	return path, nil
}
