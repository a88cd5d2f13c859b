# parnet: one non-recursive Makefile.
#   make                  library lib/libparnet.a and every program in bin/
#   make test             unit, program and recipe tests; last line "N passed, N failed"
#   make SAN=address,undefined test    the same under sanitizers (objects in build/san)
#   make fuzz             libFuzzer targets for every reader (clang), in build/fuzz/
#   make fuzz-long FUZZ_SECONDS=3600   run each target that long (tests/fuzz/fuzz-long.sh)
#   make ARCH=x86-64-v2   portable code (no AVX-512): what valgrind can run (make valgrind-test)
#   make CUDA=1           adds the GPU backend (nvcc, cuBLAS, cuDNN) from src/cuda/
#   make DEBUG=1          -O0 -g
#   make DNNL=0           without oneDNN (found and used by default: --precision=bf16)
CUDA ?= 0
DEBUG ?= 0
# Programs are built where they run (CI builds on its own machine); ARCH=x86-64-v2 for portable builds.
ARCH ?= native
SAN ?=
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc

CC ?= cc
# Files generated from the sources (the same for every build configuration).
GEN := build/gen
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter -Wshadow -pthread -Isrc \
               -I$(GEN)
ifeq ($(DEBUG),1)
  OPT := -O0 -g
else
  OPT := -O2 -g -march=$(ARCH)
endif
LDLIBS := -lopenblas -lfftw3f -lz -lpthread -lm

# oneDNN (Debian's libdnnl-dev): the bf16 matrix products on AMX / AVX512-BF16 (src/matrix/onednn.c).
# Used when its header and library are found; without it everything builds and runs as before and
# --precision=bf16 says why it cannot run. oneDNN's Debian build threads with OpenMP (libgomp).
DNNL_FOUND := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_get_effective_cpu_isa() < 0;}\n' | \
                $(CC) -x c - -ldnnl -o /dev/null 2>/dev/null && echo 1 || echo 0)
DNNL ?= $(DNNL_FOUND)
ifeq ($(DNNL),1)
  CFLAGS_DNNL := -DHAVE_DNNL=1
  LDLIBS := -ldnnl -lgomp $(LDLIBS)
endif

ifneq ($(SAN),)
  # Sanitized objects live apart so a sanitizer run never mixes with a normal build.
  BUILD := build/san
  BIN := build/san/bin
  LIB := build/san/lib
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=$(SAN) -fno-sanitize-recover=all
  LDFLAGS += -fsanitize=$(SAN)
else
  # A portable build (ARCH=x86-64-v2, for valgrind) keeps its objects apart from the native ones.
  BUILD := build/obj$(if $(filter native,$(ARCH)),,-$(ARCH))
  BIN := bin
  LIB := lib
endif

ifeq ($(CUDA),1)
  CFLAGS_CUDA := -DHAVE_CUDA=1 -I$(CUDA_HOME)/include
  # The rpath lets programs find libcudart/libcublas/libcudnn without LD_LIBRARY_PATH.
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudnn -lcublas -lcudart -lstdc++
  BUILD := $(BUILD)-cuda
endif
# Machine code for Turing (T4), Ampere (A100) and Hopper (H100/H200), plus PTX that newer GPUs
# compile at load time. CUDA_ARCH=-arch=native builds for this machine's GPU only (faster).
CUDA_ARCH ?= -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
             -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS := -O2 -g -std=c++17 -Isrc -DHAVE_CUDA=1 --extended-lambda $(CUDA_ARCH) \
             -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -MMD -MP

CFLAGS += $(CFLAGS_BASE) $(OPT) $(CFLAGS_CUDA) $(CFLAGS_DNNL) -MMD -MP

# Layers, lowest first (docs/STYLE.md §2): a module includes only its own layer or lower ones.
MODULES := base matrix cuda io feat natgrad egs nnet update train models decode
LIB_SRC := $(foreach m,$(MODULES),$(wildcard src/$(m)/*.c))
LIB_OBJ := $(LIB_SRC:src/%.c=$(BUILD)/%.o)
CU_SRC := $(if $(filter 1,$(CUDA)),$(wildcard src/cuda/*.cu))
CU_OBJ := $(CU_SRC:src/%.cu=$(BUILD)/%.cu.o)
PROG_SRC := $(filter-out src/bin/nnet-train-mpi.c src/bin/espeak-synth-align.c,$(wildcard src/bin/*.c))
PROGS := $(PROG_SRC:src/bin/%.c=$(BIN)/%)
UNIT_SRC := $(wildcard tests/unit/*-test.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)
LIBA := $(LIB)/libparnet.a

# The MPI trainer is built only where Open MPI's compiler wrapper exists.
MPICC := $(shell command -v mpicc 2>/dev/null)
ifneq ($(MPICC),)
  ifneq ($(wildcard src/bin/nnet-train-mpi.c),)
    PROGS += $(BIN)/nnet-train-mpi
  endif
endif

# The corpus synthesizer (egs/espeak-digits) is built only where libespeak-ng's header exists.
ESPEAK_H := $(wildcard /usr/include/espeak-ng/speak_lib.h)
ifneq ($(ESPEAK_H),)
  PROGS += $(BIN)/espeak-synth-align
endif

.PHONY: all test fuzz fuzz-long valgrind-test clean features check-cuda print-ldlibs FORCE
all: features $(PROGS) $(UNIT_BIN)

features:
	@echo "parnet: nvcc $(if $(wildcard $(NVCC)),found at $(NVCC),not found)$(if $(filter 1,$(CUDA)), (CUDA=1: GPU backend on), (GPU backend off; make CUDA=1))"
	@echo "parnet: mpicc $(if $(MPICC),found (nnet-train-mpi built),not found (nnet-train-mpi skipped))"
	@echo "parnet: libespeak-ng $(if $(ESPEAK_H),found (espeak-synth-align built),not found (espeak-synth-align skipped))"
	@echo "parnet: oneDNN $(if $(filter 1,$(DNNL_FOUND)),found,not found)$(if $(filter 1,$(DNNL)), (bf16 matrix products on: --precision=bf16),$(if $(filter 1,$(DNNL_FOUND)), (bf16 off: DNNL=0), (bf16 off; install libdnnl-dev)))"

# The libraries a program linked against lib/libparnet.a needs (bench/ scripts build with them).
print-ldlibs:
	@echo '$(LDLIBS)'

# Rebuild everything when the flags change.
STAMP := $(BUILD)/flags.stamp
$(STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(CC) $(CFLAGS) $(LDFLAGS) $(LDLIBS) $(NVCCFLAGS)' | cmp -s - $@ || \
	    echo '$(CC) $(CFLAGS) $(LDFLAGS) $(LDLIBS) $(NVCCFLAGS)' > $@
FORCE:
# bin/ and lib/ are shared by the CPU and the CUDA=1 build: this stamp names the build whose
# library lib/ holds, so switching builds re-archives the library and relinks the programs
# (otherwise `make` after `make CUDA=1` would link CPU test binaries against CUDA objects).
LIB_STAMP := $(LIB)/build.stamp
$(LIB_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(BUILD)' | cmp -s - $@ || echo '$(BUILD)' > $@

$(BUILD)/%.o: src/%.c $(STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.cu.o: src/%.cu $(STAMP)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

# The component registry (src/nnet/component.c) and nnet-init's list of types come from this
# X-macro list: one COMPONENT(name) per ops table defined in src/nnet/components-*.c, found by
# its definition line (`const struct component_ops name` or `NONLINEAR_OPS(name, ...`), so a new
# component is its source, its test row and its docs row (docs/ARCHITECTURE.md, "A component").
COMPONENT_SRC := $(sort $(wildcard src/nnet/components-*.c))
$(GEN)/nnet/component-list.h: $(COMPONENT_SRC)
	@mkdir -p $(dir $@)
	sed -n 's/^\(const struct component_ops\|NONLINEAR_OPS(\) *\([a-z0-9_]*_component_ops\)\b.*/COMPONENT(\2)/p' \
	    $^ > $@.tmp && mv $@.tmp $@
$(BUILD)/nnet/component.o build/fuzz/obj/nnet/component.o: $(GEN)/nnet/component-list.h

$(LIBA): $(LIB_OBJ) $(CU_OBJ) $(LIB_STAMP)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $(filter %.o,$^)

$(BIN)/%: $(BUILD)/bin/%.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -pthread $< $(LIBA) $(LDLIBS) -o $@

$(BUILD)/bin/nnet-train-mpi.o: src/bin/nnet-train-mpi.c $(STAMP)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -DHAVE_MPI=1 -c $< -o $@
$(BIN)/nnet-train-mpi: $(BUILD)/bin/nnet-train-mpi.o $(LIBA)
	@mkdir -p $(dir $@)
	$(MPICC) $(LDFLAGS) -pthread $< $(LIBA) $(LDLIBS) $(if $(filter 1,$(CUDA)),-lnccl) -o $@

$(BIN)/espeak-synth-align: $(BUILD)/bin/espeak-synth-align.o $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -pthread $< $(LIBA) -lespeak-ng $(LDLIBS) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(LIBA)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) $< $(LIBA) $(LDLIBS) -o $@

test: all
	@PARNET_BIN=$(abspath $(BIN)) PARNET_UNIT=$(abspath $(BUILD)/tests) bash tests/run-tests.sh

# libFuzzer targets: the library is compiled again with clang and coverage instrumentation, once
# into build/fuzz/obj (fuzzer-no-link), and each target links that archive.
FUZZ_SAN := address,undefined
FUZZ_CFLAGS := $(CFLAGS_BASE) -O1 -g -fsanitize=fuzzer-no-link,$(FUZZ_SAN)
# (and the one reader of src/update: the block-momentum state, fuzzed by fuzz-nnet-read)
FUZZ_LIB_SRC := $(foreach m,base matrix io feat natgrad egs nnet,$(wildcard src/$(m)/*.c)) \
                src/update/bmuf.c
FUZZ_LIB_OBJ := $(FUZZ_LIB_SRC:src/%.c=build/fuzz/obj/%.o)
FUZZ_LIBA := build/fuzz/libparnet-fuzz.a
fuzz: $(FUZZ_BIN)
build/fuzz/obj/%.o: src/%.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(FUZZ_LIBA): $(FUZZ_LIB_OBJ)
	rm -f $@ && ar rcs $@ $^
build/fuzz/%: tests/fuzz/%.c $(FUZZ_LIBA) $(wildcard src/*/*.h tests/fuzz/*.h)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIBA) $(LDLIBS) -o $@
-include $(FUZZ_LIB_OBJ:.o=.d)

FUZZ_SECONDS ?= 600
fuzz-long:
	bash tests/fuzz/fuzz-long.sh $(if $(FUZZ_RUNS),--runs $(FUZZ_RUNS)) $(FUZZ_SECONDS)

# The unit tests under valgrind's memcheck. -march=native may use AVX-512, which valgrind cannot
# decode, so call this with ARCH=x86-64-v2 (or v3) unless the build machine lacks AVX-512.
valgrind-test: $(UNIT_BIN)
	@bash tests/valgrind-unit.sh $(abspath $(BUILD)/tests)

check-cuda:
	$(MAKE) CUDA=1 all

clean:
	rm -rf build bin lib

-include $(LIB_OBJ:.o=.d) $(CU_OBJ:.o=.d) $(PROG_SRC:src/%.c=$(BUILD)/%.d) $(BUILD)/bin/nnet-train-mpi.d \
    $(BUILD)/bin/espeak-synth-align.d
.SECONDARY:
