"""Small upstream-shaped repositories for the trace tests, built with GitPython (our own code, not upstream's).

ollama-python: v0.4.0 (TypedDict Options), v0.6.1 (pydantic Options), v0.5.0 (dataclass with attribute docstrings), v0.7.0
(num_gpu renamed to gpu_layers with a pydantic alias: the Python field is gone).
ollama: v0.17.5 (every hop kind: JSON tags, CLI help, call argument → parameter, a load request over
HTTP with json tags on both sides and different field names, cgo, vendored llama.cpp); v0.18.0 (lines
moved, the Go field renamed NumGPU → GPULayers behind the same json tag); v0.19.0 (the cgo bridge moved
to llama/bridge/, the CLI help line removed); v0.30.0 (llama.cpp named in LLAMA_CPP_VERSION, llama-server
started with -ngl / -c / -t flags; the Go runner and the cgo bridge are gone).
llama.cpp: b100 (include/llama.h, common/common.h, common/arg.cpp, a C getenv).
"""

from __future__ import annotations

from pathlib import Path

import git

from tests.gitrepos import commit_tree, new_repo

TYPES_PY = """from typing import Optional

from pydantic import BaseModel, Field


class SubscriptableBaseModel(BaseModel):
  def __getitem__(self, key):
    return getattr(self, key)


class Options(SubscriptableBaseModel):
  # load time options
  num_ctx: Optional[int] = None
  num_gpu: Optional[int] = None  # layers to offload
  main_gpu: Optional[int] = None
  use_mmap: Optional[bool] = None
  num_thread: Optional[int] = Field(None, description="CPU threads for generation")
"""

TYPES_DATACLASS_PY = '''from dataclasses import dataclass


@dataclass
class Options:
  num_gpu: int = 0
  """How many layers go to the GPU."""
  num_ctx: int = 2048
'''

TYPES_TYPEDDICT_PY = """from typing import TypedDict


class Options(TypedDict, total=False):
  # load time options
  num_gpu: int
  num_ctx: int
"""

TYPES_RENAMED_PY = """from typing import Optional

from pydantic import BaseModel, Field


class Options(BaseModel):
  gpu_layers: Optional[int] = Field(None, alias="num_gpu")
  num_ctx: Optional[int] = None
"""

CLIENT_PY = """import os


def _host():
  return os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")


def _gfx():
  return os.getenv("HSA_OVERRIDE_GFX_VERSION")
"""

API_TYPES_GO = """package api

// Options specified in GenerateRequest.
type Options struct {
	Runner

	Temperature float32 `json:"temperature,omitempty"`
}

// Runner options which must be set when the model is loaded into memory
type Runner struct {
	NumCtx    int   `json:"num_ctx,omitempty"`
	{numgpu}    int   `json:"num_gpu,omitempty"` // layers to offload
	MainGPU   int   `json:"main_gpu,omitempty"`
	UseMMap   *bool `json:"use_mmap,omitempty"`
	NumThread int   `json:"num_thread,omitempty"`
}
"""

INTERACTIVE_GO = """package cmd

import (
	"fmt"
	"os"
)

func usageParameters() {
	fmt.Fprintln(os.Stderr, "Available Parameters:")
	fmt.Fprintln(os.Stderr, "  /set parameter num_ctx <int>          Set the context size")
{gpuhelp}}
"""
GPU_HELP = (
    '	fmt.Fprintln(os.Stderr, "  /set parameter num_gpu <int>          The number of layers to send to the GPU")\n'
)

SERVER_GO = """package llm

import (
	"log/slog"

	"example.com/ollama/api"
)

// LoadRequest is sent to the runner as JSON.
type LoadRequest struct {
	KvSize     int  `json:"kv_size"`
	NumThreads int  `json:"num_threads"` // threads for generation
	MainGPU    int  `json:"main_gpu"`
	UseMmap    bool `json:"use_mmap"`
	GPULayers  int  `json:"num_gpu_layers"`
}

type llamaServer struct {
	options     api.Options
	loadRequest LoadRequest
	layers      []uint64
}

func NewLlamaServer(opts api.Options, numParallel int) *llamaServer {
	loadRequest := LoadRequest{KvSize: opts.NumCtx * numParallel}
	opts.NumCtx = min(opts.NumCtx, 4096)
	loadRequest.NumThreads = opts.NumThread
	if opts.MainGPU > 0 {
		loadRequest.MainGPU = opts.MainGPU
	}
	return &llamaServer{options: opts, loadRequest: loadRequest}
}

func (s *llamaServer) Load() {
	slog.Info("loading model", "requested", s.options.{numgpu})
	_ = uint64(s.options.{numgpu})
	// the server decides how many layers each GPU gets
	gpuLayers := assignLayers(s.layers, s.options.{numgpu})
	s.loadRequest.GPULayers = len(gpuLayers)
	s.loadRequest.UseMmap = s.options.UseMMap != nil && *s.options.UseMMap
}

// assignLayers places up to requestedLayers layers on the GPUs.
func assignLayers(layers []uint64, requestedLayers int) []int {
	return make([]int, min(len(layers), requestedLayers))
}
"""

RUNNER_GO = """package llamarunner

import (
	"encoding/json"
	"net/http"

	"example.com/ollama/llama"
)

// loadRequest is what the server sends: other field names, the same JSON keys.
type loadRequest struct {
	ContextSize int  `json:"kv_size"`
	Threads     int  `json:"num_threads"` // decoded from the server's NumThreads
	GPU         int  `json:"main_gpu"`
	UseMmap     bool `json:"use_mmap"`
	Layers      int  `json:"num_gpu_layers"`
}

type Server struct{}

func (s *Server) load(w http.ResponseWriter, r *http.Request) {
	var req loadRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	params := llama.ModelParams{
		NumGpuLayers: req.Layers,
		MainGpu:      req.GPU,
		UseMmap:      req.UseMmap,
	}
	go s.loadModel(params, req.ContextSize, req.Threads)
}

// loadModel loads the weights and creates the context.
func (s *Server) loadModel(params llama.ModelParams, kvSize int, threads int) {
	llama.LoadModelFromFile("model.gguf", params)
	ctxParams := llama.NewContextParams(kvSize, threads)
	_ = ctxParams
}
"""

LLAMA_GO = """package llama

/*
#include "llama.h"
*/
import "C"

type ModelParams struct {
	NumGpuLayers int
	MainGpu      int
	UseMmap      bool
}

type ContextParams struct {
	c C.struct_llama_context_params
}

func LoadModelFromFile(modelPath string, params ModelParams) {
	cparams := C.llama_model_default_params()
	cparams.n_gpu_layers = C.int(params.NumGpuLayers)
	cparams.main_gpu = C.int32_t(params.MainGpu)
	cparams.use_mmap = C.bool(params.UseMmap)
	_ = cparams
}

// NewContextParams fills llama.cpp's context parameters.
func NewContextParams(numCtx int, threads int) ContextParams {
	params := C.llama_context_default_params()
	params.n_ctx = C.uint(numCtx)
	params.n_threads = C.int(threads) // generation threads
	return ContextParams{c: params}
}
"""

LLAMA_H = """#ifndef LLAMA_H
#define LLAMA_H

#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

    struct llama_model_params {
        int32_t n_gpu_layers; // number of layers to store in VRAM

        // the GPU that is used for the entire model when split_mode is LLAMA_SPLIT_MODE_NONE
        int32_t main_gpu;

        bool vocab_only;      // only load the vocabulary, no weights
        bool use_mmap;        // use mmap if possible
    };

    struct llama_context_params {
        uint32_t n_ctx;             // text context, 0 = from model
        int32_t  n_threads;         // number of threads to use for generation
    };

#ifdef __cplusplus
}
#endif

#endif // LLAMA_H
"""

COMMON_H = """#pragma once

#include <string>

struct common_params {
    int32_t n_ctx              = 4096; // context size
    int32_t n_gpu_layers       = -1;   // number of layers to store in VRAM (-1 - use default)
    int32_t main_gpu           = 0;    // the GPU that is used for scratch and small tensors
    int32_t n_threads          = -1;   // number of threads
};
"""

ARG_CPP = """#include "arg.h"
#include "common.h"

void common_params_parser_init(common_params_context & ctx_arg) {
    auto add_opt = [&](common_arg arg) { ctx_arg.options.push_back(arg); };
    add_opt(common_arg(
        {"-c", "--ctx-size"}, "N",
        string_format("size of the prompt context (default: %d, 0 = loaded from model)", 4096),
        [](common_params & params, int value) {
            params.n_ctx = value;
        }
    ).set_env("LLAMA_ARG_CTX_SIZE"));
    add_opt(common_arg(
        {"-ngl", "--gpu-layers", "--n-gpu-layers"}, "N",
        "max. number of layers to store in VRAM, either an exact number, 'auto', or 'all'",
        [](common_params & params, const std::string & value) {
            if (value == "auto") {
                params.n_gpu_layers = -1;
            } else {
                params.n_gpu_layers = std::stoi(value);
            }
        }
    ).set_env("LLAMA_ARG_N_GPU_LAYERS"));
    add_opt(common_arg(
        {"-t", "--threads"}, "N",
        "number of CPU threads to use during generation",
        [](common_params & params, int value) {
            params.n_threads = value;
        }
    ));
}
"""

GGML_CUDA_CU = """#include <cstdlib>

static void ggml_cuda_init() {
    if (std::getenv("GGML_CUDA_INIT") != NULL) {
        return;
    }
    const char * gfx = getenv("HSA_OVERRIDE_GFX_VERSION");
    (void) gfx;
}
"""

LLAMA_SERVER_GO = """package llm

import (
	"strconv"

	"example.com/ollama/api"
)

type launch struct {
	opts        api.Options
	numParallel int
}

// llama-server auto-detects GPU layers (-ngl) unless the user set num_gpu.
func (l launch) args() []string {
	params := []string{
		"--model", "model.gguf",
		"-c", strconv.Itoa(l.opts.NumCtx * l.numParallel),
	}
	// GPU layer offloading: only pass it when the user set it.
	if l.opts.NumGPU > 0 {
		params = append(params, "-ngl", strconv.Itoa(l.opts.NumGPU))
	}
	if l.opts.NumThread > 0 {
		params = append(params, "-t", strconv.Itoa(l.opts.NumThread))
	}
	return params
}
"""

ENVCONFIG_GO = """package envconfig

import "os"

type EnvVar struct {
	Name        string
	Value       any
	Description string
}

func String(s string) func() string {
	return func() string { return os.Getenv(s) }
}

var (
	// HsaOverrideGfxVersion overrides the gfx target of every AMD GPU.
	HsaOverrideGfxVersion = String("HSA_OVERRIDE_GFX_VERSION")
)

func AsMap() map[string]EnvVar {
	ret := map[string]EnvVar{}
	ret["HSA_OVERRIDE_GFX_VERSION"] = EnvVar{"HSA_OVERRIDE_GFX_VERSION", HsaOverrideGfxVersion(), "Override the gfx used for all detected AMD GPUs"}
	return ret
}
"""

DISCOVER_GO = """package discover

import (
	"log/slog"
	"os"
)

func overrideWarnings(m map[string]string) {
	for _, k := range []string{
		"CUDA_VISIBLE_DEVICES",
		"HSA_OVERRIDE_GFX_VERSION",
	} {
		if v, found := m[k]; found && v != "" {
			slog.Warn("user overrode visible devices", k, v)
		}
	}
	slog.Info("skipping rocm gfx compatibility check", "HSA_OVERRIDE_GFX_VERSION", os.Getenv("HSA_OVERRIDE_GFX_VERSION"))
}
"""

DEVICE_GO = """package ml

// AddInitValidation makes the runner initialise devices deeply.
func AddInitValidation(env map[string]string) {
	env["GGML_CUDA_INIT"] = "1" // force deep initialization
}
"""

DISCOVER_TEST_GO = """package discover

import "testing"

func TestOverride(t *testing.T) {
	t.Setenv("HSA_OVERRIDE_GFX_VERSION", "9.0.0")
}
"""


def _commit(repo: git.Repo, root: Path, files: dict[str, str | None], message: str, tag: str) -> None:
    commit_tree(repo, files, message, tag=tag)


def _init(path: Path) -> git.Repo:
    return new_repo(path)


def build_client(path: Path) -> git.Repo:
    repo = _init(path)
    _commit(
        repo,
        path,
        {"ollama/_types.py": TYPES_TYPEDDICT_PY, "ollama/_client.py": CLIENT_PY},
        "TypedDict options",
        "v0.4.0",
    )
    _commit(repo, path, {"ollama/_types.py": TYPES_DATACLASS_PY}, "dataclass options", "v0.5.0")
    _commit(
        repo, path, {"ollama/_types.py": TYPES_PY, "tests/test_types.py": "num_gpu = 1\n"}, "pydantic options", "v0.6.1"
    )
    _commit(repo, path, {"ollama/_types.py": TYPES_RENAMED_PY}, "num_gpu renamed to gpu_layers", "v0.7.0")
    return repo


MOVED_BY = 7  # lines inserted at the top of every Go file in v0.18.0


def _shift(text: str) -> str:
    return "".join(f"// line {i} added in v0.18.0\n" for i in range(MOVED_BY)) + text


def ollama_files(numgpu: str = "NumGPU", help_line: bool = True) -> dict[str, str]:
    return {
        "api/types.go": API_TYPES_GO.replace("{numgpu}", numgpu),
        "cmd/interactive.go": INTERACTIVE_GO.replace("{gpuhelp}", GPU_HELP if help_line else ""),
        "llm/server.go": SERVER_GO.replace("{numgpu}", numgpu),
        "runner/llamarunner/runner.go": RUNNER_GO,
        "llama/llama.go": LLAMA_GO,
        "llama/llama.cpp/include/llama.h": LLAMA_H,
        "llama/llama.cpp/common/common.h": COMMON_H,
        "envconfig/config.go": ENVCONFIG_GO,
        "discover/runner.go": DISCOVER_GO,
        "discover/runner_test.go": DISCOVER_TEST_GO,
        "ml/device.go": DEVICE_GO,
        "ml/backend/ggml/ggml/src/ggml-cuda/ggml-cuda.cu": GGML_CUDA_CU,
    }


def build_ollama(path: Path) -> git.Repo:
    repo = _init(path)
    _commit(repo, path, ollama_files(), "ollama at the seed's version", "v0.17.5")
    moved = {rel: _shift(text) if rel.endswith(".go") else text for rel, text in ollama_files("GPULayers").items()}
    _commit(repo, path, moved, "lines moved; NumGPU renamed to GPULayers behind the same json tag", "v0.18.0")
    files = ollama_files(help_line=False)
    files["llama/bridge/bridge.go"] = files.pop("llama/llama.go")
    _commit(repo, path, {**files, "llama/llama.go": None}, "bridge moved to llama/bridge; CLI help dropped", "v0.19.0")
    gone = {rel: None for rel in ollama_files() if rel.startswith(("llama/", "runner/"))}
    gone["llama/bridge/bridge.go"] = None
    new = {rel: text for rel, text in ollama_files().items() if not rel.startswith(("llama/", "runner/"))}
    new |= {"LLAMA_CPP_VERSION": "b100\n", "llm/llama_server.go": LLAMA_SERVER_GO}
    _commit(repo, path, {**gone, **new}, "llama.cpp named in LLAMA_CPP_VERSION; llama-server with flags", "v0.30.0")
    return repo


def build_llama_cpp(path: Path) -> git.Repo:
    repo = _init(path)
    _commit(
        repo,
        path,
        {
            "include/llama.h": LLAMA_H,
            "common/common.h": COMMON_H,
            "common/arg.cpp": ARG_CPP,
            "ggml/src/ggml-cuda/ggml-cuda.cu": GGML_CUDA_CU,
        },
        "llama.cpp",
        "b100",
    )
    return repo
