# trainyard - top-level build. `make` builds every program into build/bin.
# See README.md for the targets; `make help` lists them.

CC        ?= cc
SANITIZE  ?=
BUILD     ?= $(if $(SANITIZE),build/san,build)
PKGS      := libmicrohttpd jansson libpq libcurl openssl libpcre2-8 libarchive
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla \
           -Wwrite-strings -Wformat=2 -Wno-format-nonliteral
CFLAGS  ?= -O2 -g
CFLAGS  += -DSOURCE_DIR=\"$(CURDIR)\" -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE $(WARN) -pthread -MMD -MP \
           $(INC) -I$(BUILD)/gen $(PKG_CFLAGS)
LDLIBS  += $(PKG_LIBS) -pthread -lm
ifneq ($(SANITIZE),)
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# lib/ is laid out in layers, each a folder, lowest first (lib/README.md).
# A layer's objects are compiled with the include paths of itself and the
# layers below it only, so an include of a higher layer fails to build.
# authz/ (roles and permissions, no dependencies) sits below users.
LIB_LAYERS := base crypt db audit users ckpt data code job
layer_inc = $(foreach l,$(wordlist 1,$(1),$(LIB_LAYERS)),-Ilib/$(l))
INC := $(call layer_inc,9) -Iauthz
$(BUILD)/obj/lib/base/%.o:  INC = $(call layer_inc,1)
$(BUILD)/obj/lib/crypt/%.o: INC = $(call layer_inc,2)
$(BUILD)/obj/lib/db/%.o:    INC = $(call layer_inc,3)
$(BUILD)/obj/lib/audit/%.o: INC = $(call layer_inc,4)
$(BUILD)/obj/lib/users/%.o: INC = $(call layer_inc,5) -Iauthz
$(BUILD)/obj/lib/ckpt/%.o:  INC = $(call layer_inc,6) -Iauthz
$(BUILD)/obj/lib/data/%.o:  INC = $(call layer_inc,7) -Iauthz
$(BUILD)/obj/lib/code/%.o:  INC = $(call layer_inc,8) -Iauthz
$(BUILD)/obj/lib/job/%.o:   INC = $(call layer_inc,9) -Iauthz
$(BUILD)/obj/authz/%.o:     INC = -Iauthz

# Each program's folder sees lib/ and authz/ and itself, never another
# program's folder; the tests of a program see it and tests/unit's helpers.
# The trainer (trainer/) also needs MPI, OpenBLAS and OpenMP; only its
# objects, its program and its tests are built and linked with them.
# OpenBLAS is the OpenMP build (libopenblas-openmp-dev), linked by rpath:
# its sgemm then shares one thread pool with the trainer's own OpenMP loops
# instead of two pools spinning against each other on the same cores.
MULTIARCH    := $(shell $(CC) -print-multiarch 2>/dev/null)
OPENBLAS_DIR := /usr/lib/$(MULTIARCH)/openblas-openmp
TRAIN_PKGS   := ompi-c openblas
TRAIN_CFLAGS := $(shell PKG_CONFIG_PATH=$(OPENBLAS_DIR)/pkgconfig pkg-config --cflags $(TRAIN_PKGS) \
                  2>/dev/null) -fopenmp
TRAIN_LIBS   := $(shell PKG_CONFIG_PATH=$(OPENBLAS_DIR)/pkgconfig pkg-config --libs $(TRAIN_PKGS) \
                  2>/dev/null) -Wl,-rpath,$(OPENBLAS_DIR) -fopenmp

LIB_SRC  := $(wildcard $(LIB_LAYERS:%=lib/%/*.c)) $(wildcard authz/*.c)
API_SRC  := $(filter-out api/main.c,$(wildcard api/*.c))
CLI_SRC  := $(filter-out cli/main.c,$(wildcard cli/*.c))
TRAIN_SRC := $(filter-out trainer/main.c,$(wildcard trainer/*.c))
# The worker runtime (worker/): no MPI, no OpenMP.
RUNTIME_SRC := $(filter-out worker/main.c,$(wildcard worker/*.c))
# The scheduler (scheduler/) is the only part linked with libslurm.
SCHED_SRC := $(filter-out scheduler/main.c,$(wildcard scheduler/*.c))
SLURM_LIBS := -lslurm
UNIT_SRC := $(wildcard tests/unit/test_*.c)
SCHED_UNIT_SRC := $(wildcard tests/scheduler/test_*.c)
TRAIN_UNIT_SRC := $(wildcard tests/trainer/test_*.c)
RUNTIME_UNIT_SRC := $(wildcard tests/worker/test_*.c)
MPI_TEST_SRC := $(wildcard tests/trainer/mpitest_*.c)
ITEST_SRC := $(wildcard tests/integration/itest_*.c)
# Helpers the integration scripts run (not tests themselves): tool_seal
# writes encrypted logs and checkpoints with the checkpoint store (lib/).
TOOL_SRC := $(wildcard tests/integration/tool_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB_A   := $(BUILD)/lib/libtrainyard.a
API_A   := $(BUILD)/lib/libtrainyard-api.a
CLI_A   := $(BUILD)/lib/libyardctl.a
TRAIN_A := $(BUILD)/lib/libtytrain.a
RUNTIME_A := $(BUILD)/lib/libtyworker.a
SCHED_A := $(BUILD)/lib/libtysched.a
GEN_C   := $(BUILD)/gen/embedded.c
VERSION_C := $(BUILD)/gen/version.c
EMBED   := $(BUILD)/tools/embed
BINS    := $(BUILD)/bin/trainyard-api $(BUILD)/bin/yardctl $(BUILD)/bin/trainyard-train \
           $(BUILD)/bin/trainyard-worker $(BUILD)/bin/trainyard-scheduler
tests_bin = $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(1)))
LIB_UNIT_BINS := $(call tests_bin,$(UNIT_SRC))
TRAIN_UNIT_BINS := $(call tests_bin,$(TRAIN_UNIT_SRC))
SCHED_UNIT_BINS := $(call tests_bin,$(SCHED_UNIT_SRC))
RUNTIME_UNIT_BINS := $(call tests_bin,$(RUNTIME_UNIT_SRC))
UNIT_BINS := $(LIB_UNIT_BINS) $(TRAIN_UNIT_BINS) $(SCHED_UNIT_BINS) $(RUNTIME_UNIT_BINS)
MPI_TEST_BINS := $(call tests_bin,$(MPI_TEST_SRC))
ITEST_BINS := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(ITEST_SRC))
TOOL_BINS := $(patsubst tests/integration/%.c,$(BUILD)/tests/%,$(TOOL_SRC))
Q ?= @
EMBEDDED := $(sort $(wildcard migrations/*.sql)) api/openapi.json ui/index.html ui/app.js ui/app.css

.PHONY: FORCE all test unit itest bench demo deps fuzz format format-check clean help docs openapi chaos chaos-ha gpu gpu-build
all: $(BINS) $(if $(GPU),gpu)

help:
	@echo "make              build every program into build/bin"
	@echo "make test         the whole suite (starts and stops PostgreSQL and the API)"
	@echo "make unit         unit tests only (no services)"
	@echo "make SANITIZE=address,undefined test   the same under ASan/UBSan (build/san)"
	@echo "make fuzz         libFuzzer targets, FUZZ_SECONDS each (default 20)"
	@echo "make chaos        the chaos test alone, CHAOS_SECONDS long (default 600)"
	@echo "make chaos-ha     the chaos test through haproxy, Patroni and a standby scheduler (about 5 min)"
	@echo "make bench        API, trainer, crypto, scheduler, audit log and lineage benchmarks"
	@echo "make demo         bring up the local stack and submit a job"
	@echo "make deps         install the Debian packages when missing (GPU=1: and the CUDA toolkit)"
	@echo "make GPU=1 gpu    the GPU backend and its device checks (tests/gpu/run runs them)"
	@echo "make docs         regenerate docs/errors.md from lib/base/errors.def, and make openapi"
	@echo "make openapi      list the server's own error answers on every operation of api/openapi.json"
	@echo "make format       clang-format every C file; format-check only checks"

$(EMBED): tools/embed.c
	@mkdir -p $(@D)
	$(CC) -std=c11 -O1 -Wall -Wextra -Werror -o $@ $<

# Migrations and the OpenAPI document are compiled into the binaries, so a
# binary knows exactly which schema versions it understands.
$(GEN_C): $(EMBED) $(EMBEDDED)
	@mkdir -p $(@D)
	$(EMBED) $(EMBEDDED) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $<"
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/api/%.o: CFLAGS += -Iapi
$(BUILD)/obj/cli/%.o: CFLAGS += -Icli
$(BUILD)/obj/trainer/%.o: CFLAGS += $(TRAIN_CFLAGS) -Itrainer
$(BUILD)/obj/worker/%.o: CFLAGS += -Iworker
$(BUILD)/obj/scheduler/%.o: CFLAGS += -Ischeduler
$(BUILD)/obj/tests/unit/%.o: CFLAGS += -Itests/unit -Iapi -Icli
$(BUILD)/obj/tests/trainer/%.o: CFLAGS += $(TRAIN_CFLAGS) -Itests/unit -Itests/trainer -Itrainer
$(BUILD)/obj/tests/worker/%.o: CFLAGS += -Itests/unit -Iworker
$(BUILD)/obj/tests/scheduler/%.o: CFLAGS += -Itests/unit -Ischeduler
$(BUILD)/obj/tests/integration/%.o: CFLAGS += -Itests/unit -Itests/integration
$(BUILD)/obj/bench/crypto.o: CFLAGS += -Itests/unit
$(BUILD)/obj/bench/sched.o: CFLAGS += -Ischeduler

# The release and the commit (lib/base/version.h): rewritten only when they change.
$(VERSION_C): FORCE
	@mkdir -p $(@D)
	@tools/version-gen $@

FORCE:

$(BUILD)/obj/gen/version.o: $(VERSION_C)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/gen/embedded.o: $(GEN_C)
	@mkdir -p $(@D)
	$(CC) $(filter-out -Werror,$(CFLAGS)) -c -o $@ $<

$(LIB_A): $(call obj,$(LIB_SRC)) $(BUILD)/obj/gen/embedded.o $(BUILD)/obj/gen/version.o
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(API_A): $(call obj,$(API_SRC))
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(CLI_A): $(call obj,$(CLI_SRC))
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(TRAIN_A): $(call obj,$(TRAIN_SRC))
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

# -rdynamic: a GPU backend may use the trainer's own functions (the CPU
# stand-in of tests/trainer/host_device.c uses its model).
$(BUILD)/bin/trainyard-train: $(call obj,trainer/main.c) $(TRAIN_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -rdynamic -o $@ $^ $(TRAIN_LIBS) $(LDLIBS)

# The CPU stand-in for the GPU backend (train_device.sh): its symbols from trainyard-train.
HOSTDEV_SO := $(BUILD)/tests/libty-hostdevice.so
# (the headers of the table it fills are named: a new ABI rebuilds it)
$(HOSTDEV_SO): tests/trainer/host_device.c trainer/gpu_backend.h trainer/gpu/model_gpu.h \
               trainer/gpu/device.h
	@mkdir -p $(@D)
	@echo "  CC      $< (shared)"
	$(Q)$(CC) $(CFLAGS) $(TRAIN_CFLAGS) -Itrainer -fPIC -shared -o $@ $<

$(RUNTIME_A): $(call obj,$(RUNTIME_SRC))
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/trainyard-worker: $(call obj,worker/main.c) $(RUNTIME_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(SCHED_A): $(call obj,$(SCHED_SRC))
	@mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BUILD)/bin/trainyard-scheduler: $(call obj,scheduler/main.c) $(SCHED_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(SLURM_LIBS) $(LDLIBS)

$(SCHED_UNIT_BINS): $(BUILD)/tests/%: $(call obj,tests/scheduler/%.c) $(SCHED_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(SLURM_LIBS) $(LDLIBS)

$(BUILD)/bin/trainyard-api: $(call obj,api/main.c) $(API_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/bin/yardctl: $(call obj,cli/main.c) $(CLI_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(LIB_UNIT_BINS): $(BUILD)/tests/%: $(call obj,tests/unit/%.c) $(API_A) $(CLI_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(TRAIN_UNIT_BINS): $(BUILD)/tests/%: $(call obj,tests/trainer/%.c) $(TRAIN_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(TRAIN_LIBS) $(LDLIBS)

# test_train_errors fails each allocation of the library in turn.
$(BUILD)/tests/test_train_errors: LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc

$(RUNTIME_UNIT_BINS): $(BUILD)/tests/%: $(call obj,tests/worker/%.c) $(RUNTIME_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(MPI_TEST_BINS): $(BUILD)/tests/%: $(call obj,tests/trainer/%.c) $(TRAIN_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(TRAIN_LIBS) $(LDLIBS)

$(BUILD)/tests/itest_%: $(call obj,tests/integration/itest_%.c) $(call obj,tests/integration/itest.c) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS)

$(BUILD)/tests/tool_%: $(call obj,tests/integration/tool_%.c) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The GPU backend (trainer/gpu/, CUDA C) and its device checks
# (tests/gpu/): built by `make GPU=1 gpu` only, with the nvcc on PATH
# (the CUDA toolkit, or Debian's nvidia-cuda-toolkit: `make deps GPU=1`).
# NVCC_ARCH picks the GPU generation (sm_90: H100, H200); NVCC_CCBIN a host
# compiler nvcc accepts when the default is too new for it. The NCCL
# communicator (trainer/gpu/comm_nccl.c) is built where nccl.h is found,
# in the toolkit's include directory or NCCL_HOME/include.
GPU        ?=
NVCC       ?= nvcc
NVCC_ARCH  ?= sm_90
NVCC_CCBIN ?=
NVCC_PATH  := $(shell command -v $(NVCC) 2>/dev/null)
# The toolkit is the one nvcc belongs to, as nvcc itself reports it (its
# --dryrun prints the include and library directories it passes on): that
# holds for /usr/local/cuda, Debian's /usr, a wrapper script on PATH, and a
# toolkit whose bin/ is not beside its lib64/. Asked only when GPU is set.
ifneq ($(GPU),)
nvcc_dirs   = $(shell $(NVCC) --dryrun -x cu -c /dev/null -o /dev/null 2>&1 | \
                sed -n 's/^\#\$$ $(1)=//p' | tr -d '"' | tr ' ' '\n' | \
                sed -n 's/^$(2)//p' | grep -v '/stubs$$' | xargs -r readlink -f)
CUDA_INC   := $(filter-out /usr/include,$(lastword $(call nvcc_dirs,INCLUDES,-I)))
CUDA_LIB   := $(filter-out /usr/lib/$(MULTIARCH),$(lastword $(call nvcc_dirs,LIBRARIES,-L)))
endif
NCCL_HOME  ?=
NCCL_H     := $(firstword $(wildcard $(CUDA_INC)/nccl.h $(NCCL_HOME)/include/nccl.h \
                                     /usr/include/nccl.h))
NCCL_INC   := $(filter-out /usr/include/,$(dir $(NCCL_H)))
NVCC_FLAGS := -O2 -std=c++17 -arch=$(NVCC_ARCH) $(if $(NVCC_CCBIN),-ccbin $(NVCC_CCBIN)) \
              -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror,-fPIC -MMD -MP \
              -Itrainer $(INC)
GPU_SRC    := $(wildcard trainer/gpu/*.cu)
GPU_OBJ    := $(patsubst %.cu,$(BUILD)/obj/%.o,$(GPU_SRC))
GPU_A      := $(BUILD)/lib/libtygpu.a
# The trainer loads the backend at run time (trainer/gpu_backend.h): the
# model's kernels, the device choice, the communicators between devices
# (NCCL's where nccl.h is found; they call the trainer's comm.c, which
# trainyard-train exports), and gpt.c's layout, built again as
# position-independent code.
GPU_SO     := $(BUILD)/lib/libtytrain-cuda.so
GPU_C_SRC  := trainer/gpu/device.c trainer/gpu/staging_cuda.c trainer/gpu/vectors_cuda.c
GPU_SO_OBJ = $(GPU_OBJ) $(call obj,$(GPU_C_SRC) trainer/gpu/backend.c $(NCCL_SRC)) \
              $(BUILD)/obj/pic/trainer/gpt.o
# The toolkit's libraries are named by path, even with no unversioned link
# name (a toolkit assembled from wheels ships libX.so.N only), so that
# another toolkit's copy on the default path (Debian's 11.8, say) is never
# linked instead; -lX only for a toolkit that lives on the default path.
# The CUDA runtime is linked statically where the toolkit has it, as nvcc
# itself does. A library the toolkit lacks leaves the GPU code compiled
# but not linked, and `make gpu` says which.
cuda_lib    = $(if $(2),$(firstword $(wildcard $(addsuffix /lib$(1).so,$(2)) \
                                               $(addsuffix /lib$(1).so.[0-9]*,$(2)))),-l$(1))
comma      := ,
NCCL_LIB   := $(filter-out /usr/lib/$(MULTIARCH),$(patsubst %/include/,%/lib,$(NCCL_INC)))
CUDA_RPATH := $(addprefix -Wl$(comma)-rpath$(comma),$(sort $(CUDA_LIB) $(NCCL_LIB)))
CUBLASLT   := $(call cuda_lib,cublasLt,$(CUDA_LIB))
CUDART     := $(or $(wildcard $(CUDA_LIB)/libcudart_static.a),$(call cuda_lib,cudart,$(CUDA_LIB)))
GPU_LIBS   := $(CUDA_RPATH) $(CUBLASLT) $(CUDART) -ldl -lrt -lpthread -lstdc++
NCCL_SRC   := $(if $(NCCL_H),trainer/gpu/comm_nccl.c)
NCCL_LIBS  := $(if $(NCCL_SRC),$(call cuda_lib,nccl,$(sort $(CUDA_LIB) $(NCCL_LIB))))
GPU_MISSING = $(strip $(if $(CUBLASLT),,libcublasLt) $(if $(CUDART),,libcudart) \
                      $(if $(NCCL_SRC),$(if $(NCCL_LIBS),,libnccl)))
GPU_TESTS  := $(patsubst tests/gpu/%.cu,$(BUILD)/gpu/%,$(wildcard tests/gpu/test_*.cu))

$(BUILD)/obj/%.o: %.cu
	@mkdir -p $(@D)
	@echo "  NVCC    $<"
	$(Q)$(NVCC) $(NVCC_FLAGS) -c -o $@ $<

$(GPU_A): $(GPU_OBJ) $(call obj,$(GPU_C_SRC) $(NCCL_SRC))
	@mkdir -p $(@D)
	@echo "  AR      $@"
	$(Q)rm -f $@ && ar rcs $@ $^

$(GPU_SO): $(GPU_SO_OBJ)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) -shared -o $@ $^ $(GPU_LIBS) $(NCCL_LIBS) -fopenmp

$(BUILD)/obj/pic/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC      $< (PIC)"
	$(Q)$(CC) $(CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/obj/pic/trainer/%.o: CFLAGS += $(TRAIN_CFLAGS) -Itrainer
$(BUILD)/obj/trainer/gpu/%.o: CFLAGS += $(TRAIN_CFLAGS) -fPIC -Itrainer \
                                        $(addprefix -isystem ,$(CUDA_INC) $(NCCL_INC))
$(BUILD)/obj/trainer/gpu/backend.o: CFLAGS += $(if $(NCCL_SRC),-DTY_HAVE_NCCL)

$(BUILD)/gpu/test_%: $(BUILD)/obj/tests/gpu/test_%.o $(GPU_A) $(TRAIN_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(GPU_LIBS) $(NCCL_LIBS) $(TRAIN_LIBS) $(LDLIBS)

gpu:
ifeq ($(GPU),)
	@echo "make gpu: the GPU backend is built with GPU=1 (make GPU=1 gpu)" >&2; exit 2
else ifeq ($(NVCC_PATH),)
	@echo "make gpu: no $(NVCC) on PATH: install the CUDA toolkit (make deps GPU=1)" >&2; exit 2
else
	@$(MAKE) --no-print-directory gpu-build
	@echo "GPU backend built with $$($(NVCC) --version | tail -n 1 | sed 's/^Build //')," \
	     "-arch=$(NVCC_ARCH), libraries from $(or $(CUDA_LIB),the default path);" \
	     "NCCL communicator:" \
	     "$(if $(NCCL_H),built against $(NCCL_H),skipped (no nccl.h))"
ifneq ($(GPU_MISSING),)
	@echo "make gpu: compiled, not linked: $(GPU_MISSING) not found in $(CUDA_LIB)" >&2
endif
endif

gpu-build: $(GPU_A) $(if $(GPU_MISSING),,$(GPU_SO) $(GPU_TESTS))

unit: $(UNIT_BINS)
	@tests/run-unit $(UNIT_BINS)

test: $(BINS) $(UNIT_BINS) $(ITEST_BINS) $(TOOL_BINS) $(MPI_TEST_BINS) $(HOSTDEV_SO)
	@BUILD=$(BUILD) tests/run

# The chaos test of make test, longer: every service killed again and again.
CHAOS_SECONDS ?= 600
chaos: $(BINS) $(UNIT_BINS) $(ITEST_BINS) $(TOOL_BINS) $(MPI_TEST_BINS)
	@BUILD=$(BUILD) CHAOS_SECONDS=$(CHAOS_SECONDS) SETTLE_SECONDS=600 TEST_FILTER=sched_chaos tests/run

# The same on the stack of several processes: PostgreSQL under Patroni, two
# API processes behind haproxy, two schedulers; either API process, the
# leading scheduler and the PostgreSQL primary killed (about 5 minutes).
CHAOS_HA_SECONDS ?= 150
chaos-ha: $(BINS) $(UNIT_BINS) $(ITEST_BINS) $(TOOL_BINS) $(MPI_TEST_BINS)
	@BUILD=$(BUILD) TEST_HA=1 CHAOS_SECONDS=$(CHAOS_HA_SECONDS) TEST_FILTER=sched_chaos tests/run

FUZZ_SECONDS ?= 20
fuzz:
	@BUILD=build/fuzz FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run

$(BUILD)/bench/sgemm: bench/sgemm.c
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(CFLAGS) $(TRAIN_CFLAGS) -o $@ $< $(TRAIN_LIBS)

$(BUILD)/bench/crypto: $(call obj,bench/crypto.c) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The scheduler bench times the scheduler's own calls: --wrap puts its
# timers in front of every database and libslurm call the scheduler makes.
BENCH_SCHED_WRAP := -Wl,--wrap=db_query,--wrap=db_begin,--wrap=db_commit,--wrap=fsync \
                    -Wl,--wrap=sl_submit_batch,--wrap=sl_our_jobs,--wrap=sl_cluster_room

$(BUILD)/bench/sched: $(call obj,bench/sched.c) $(SCHED_A) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) $(BENCH_SCHED_WRAP) -o $@ $^ $(SLURM_LIBS) $(LDLIBS)

$(BUILD)/bench/eta: $(call obj,bench/eta.c) $(LIB_A)
	@mkdir -p $(@D)
	@echo "  LINK    $@"
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bench: $(BINS) $(BUILD)/bench/sgemm $(BUILD)/bench/crypto $(BUILD)/bench/sched $(BUILD)/bench/eta
	@BUILD=$(BUILD) bench/run
	@echo
	@BUILD=$(BUILD) bench/train
	@echo
	@BUILD=$(BUILD) bench/parallel
	@echo
	@BUILD=$(BUILD) bench/crypto
	@echo
	@BUILD=$(BUILD) bench/sched
	@echo
	@BUILD=$(BUILD) bench/audit
	@echo
	@BUILD=$(BUILD) bench/lineage
	@echo
	@BUILD=$(BUILD) bench/limits
	@echo
	@BUILD=$(BUILD) bench/preempt
	@echo
	@$(BUILD)/bench/eta

demo:
	@deploy/demo

deps:
	@deploy/deps $(if $(GPU),--gpu)

docs: $(BUILD)/tests/test_error openapi
	$(BUILD)/tests/test_error --write-docs docs/errors.md

openapi: $(BUILD)/tests/test_openapi
	$(BUILD)/tests/test_openapi --write-doc api/openapi.json

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
.SECONDARY:
