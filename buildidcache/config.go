package buildidcache

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultBuildIDDir returns perf's build-id cache directory when none is
// given on the command line: $PERF_BUILDID_DIR, else buildid.dir from
// ~/.perfconfig (or /etc/perfconfig), else $HOME/.debug, else ".debug" —
// the order of set_buildid_dir in tools/perf/util/config.c, where perf
// itself exports PERF_BUILDID_DIR to the commands it runs. It is
// [ConfiguredBuildIDDir] without the warnings.
func DefaultBuildIDDir() string {
	dir, _ := ConfiguredBuildIDDir()
	return dir
}

// ConfiguredBuildIDDir is [DefaultBuildIDDir], with a warning for each
// configuration file it ignored: a ~/.perfconfig owned by neither the
// current user nor root, which perf ignores too (perf_config_set__init in
// tools/perf/util/config.c: "not owned by current user or root,
// ignoring it"), since whoever owns it could point the cache, and with it
// every lookup, anywhere.
func ConfiguredBuildIDDir() (dir string, warnings []string) {
	if d := os.Getenv("PERF_BUILDID_DIR"); d != "" {
		return d, nil
	}
	home := os.Getenv("HOME")
	for _, f := range []string{"/etc/perfconfig", filepath.Join(home, ".perfconfig")} {
		if home == "" && f != "/etc/perfconfig" {
			continue
		}
		if f != "/etc/perfconfig" {
			if w := foreignOwner(f); w != "" {
				warnings = append(warnings, w)
				continue
			}
		}
		if d := perfConfigValue(f, "buildid", "dir"); d != "" {
			dir = d // the user's file wins over the system's
		}
	}
	if dir != "" {
		return expandHome(dir, home), warnings
	}
	if home == "" {
		return ".debug", warnings
	}
	return filepath.Join(home, ".debug"), warnings
}

// foreignOwner says why file is ignored when it exists and is owned by
// neither the effective user nor root, "" otherwise.
func foreignOwner(file string) string {
	st, err := os.Stat(file)
	if err != nil {
		return ""
	}
	uid, foreign := ForeignOwner(st)
	if !foreign {
		return ""
	}
	return fmt.Sprintf("%s is owned by uid %d, not by the current user or root: ignored, as perf ignores it", file, uid)
}

func expandHome(p, home string) string {
	if home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return filepath.Join(home, p[1:])
	}
	return p
}

// maxConfigLine bounds one line of a perfconfig file.
const maxConfigLine = 1 << 16

// perfConfigValue reads key in [section] of a perfconfig file, which uses
// git's config syntax (tools/perf/util/config.c is derived from git's
// config.c): "[section]" headers, "key = value" lines, '#' and ';'
// comments, optional double quotes. It returns "" when absent or unreadable.
func perfConfigValue(file, section, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 4096), maxConfigLine)
	cur, val := "", ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				continue
			}
			cur = strings.ToLower(strings.TrimSpace(line[1:end]))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || cur != section || strings.ToLower(strings.TrimSpace(k)) != key {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, "\"") {
			v = strings.TrimSpace(v[:i])
		}
		val = strings.Trim(v, "\"")
	}
	return val
}

// DefaultDebuginfodCache returns the directory elfutils' client caches
// downloads in, so that the two share it (debuginfod_find_* in
// debuginfod/debuginfod-client.c): $DEBUGINFOD_CACHE_PATH, else
// $XDG_CACHE_HOME/debuginfod_client, else ~/.debuginfod_client_cache when
// it already exists (the deprecated location), else
// ~/.cache/debuginfod_client.
func DefaultDebuginfodCache() string {
	if d := os.Getenv("DEBUGINFOD_CACHE_PATH"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "debuginfod_client")
	}
	home := os.Getenv("HOME")
	if home == "" {
		return ""
	}
	old := filepath.Join(home, ".debuginfod_client_cache")
	if st, err := os.Stat(old); err == nil && st.IsDir() {
		return old
	}
	return filepath.Join(home, ".cache", "debuginfod_client")
}

// DebuginfodURLsFromEnv splits $DEBUGINFOD_URLS at spaces, as elfutils
// does; empty when unset, which means no network access.
func DebuginfodURLsFromEnv() []string {
	return strings.Fields(os.Getenv("DEBUGINFOD_URLS"))
}
