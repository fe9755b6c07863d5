// from: ollama@v0.12.4:discover/gpu.go (lines 1-12)
// ok: ollama-discovery-igpu-memory-floor
package discover

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

