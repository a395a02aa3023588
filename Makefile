# mpegenc — build, test, demo.
#   make          build ./mpegenc and build/libmpegenc.a
#   make test     install missing Debian packages, build with -Werror, run every test
#   make demo     install, build, encode the sample clip in samples/
#   make bench    encode the solar clip and time it (needs ../shared/solar)
#   make bench-gpu   time the front-end kernels on the solar frames
#   make bench-iqa   time the MAD and BLIINDS-II implementations

.DEFAULT_GOAL := all

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CPPFLAGS_ALL := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -I. $(CPPFLAGS)
PNG_CFLAGS := $(shell pkg-config --cflags libpng 2>/dev/null)
PNG_LIBS   := $(shell pkg-config --libs libpng 2>/dev/null || echo -lpng -lz)
FFTW_LIBS  := $(shell pkg-config --libs fftw3 2>/dev/null || echo -lfftw3)
LDLIBS_ALL := $(PNG_LIBS) $(FFTW_LIBS) -lm -lpthread $(LDLIBS)

BUILD := build
LIB   := $(BUILD)/libmpegenc.a
BIN   := mpegenc
IQA_BIN := $(if $(wildcard encoder/iqa_main.c),mpegenc-iqa)

LIB_SRCS := $(wildcard common/*.c bitstream/*.c gpu/*.c iqa/*.c encoder/*.c)
LIB_SRCS := $(filter-out encoder/main.c encoder/iqa_main.c gpu/frontend_ocl.c,$(LIB_SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)

# OpenCL backend: built when the headers and the ICD loader are there
# (make OPENCL=0 leaves it out); kernels are embedded as a C string.
OPENCL ?= $(shell printf '\043include <CL/cl.h>\nint main(void){return clGetPlatformIDs(0,0,0);}\n' | \
            $(CC) -x c - -o /dev/null -lOpenCL >/dev/null 2>&1 && echo 1 || echo 0)
ifeq ($(OPENCL),1)
CPPFLAGS_ALL += -DMPE_HAVE_OPENCL
LDLIBS_ALL   += -lOpenCL
LIB_OBJS     += $(BUILD)/obj/gpu/frontend_ocl.o $(BUILD)/gen/frontend_cl.o
endif

$(BUILD)/gen/frontend_cl.c: gpu/frontend.cl tools/embed.sh
	@mkdir -p $(dir $@)
	./tools/embed.sh mpe_frontend_cl_source $< > $@

$(BUILD)/gen/frontend_cl.o: $(BUILD)/gen/frontend_cl.c $(CONFIG)
	$(CC) $(CFLAGS) -c $< -o $@

comma := ,

# CUDA backend: built when nvcc is found (make CUDA=0 leaves it out).  The
# runtime is linked statically, so the binary starts on machines without the
# NVIDIA driver; the backend's probe then reports "no driver" and auto falls
# back.  SASS for Hopper plus PTX that older or newer GPUs can JIT.
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc; })
CUDA ?= $(if $(NVCC),1,0)
ifeq ($(CUDA),1)
CUDA_HOME  ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NVCCFLAGS  ?= -O3
NVCC_ARCH  ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
NVCC_WARN  := -Xcompiler -Wall,-Wextra$(if $(filter 1,$(WERROR)),$(comma)-Werror) $(if $(filter 1,$(WERROR)),-Werror all-warnings)
CPPFLAGS_ALL += -DMPE_HAVE_CUDA
ifneq ($(wildcard iqa/mad_cuda.cu),)
CPPFLAGS_ALL += -DMPE_HAVE_MAD_CUDA
endif
LDLIBS_ALL   += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
CUDA_SRCS    := $(wildcard gpu/*.cu iqa/*.cu)
LIB_OBJS     += $(CUDA_SRCS:%.cu=$(BUILD)/obj/%.cu.o)
endif
$(BUILD)/obj/%.cu.o: %.cu $(CONFIG)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) -I. -DMPE_HAVE_CUDA $(NVCC_WARN) -MMD -MP -MF $(@:.o=.d) -c $< -o $@
TEST_SRCS := $(wildcard tests/unit/test_*.c)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
DEPS := $(LIB_OBJS:.o=.d) $(BUILD)/obj/encoder/main.d $(BUILD)/obj/encoder/iqa_main.d $(TEST_BINS:%=%.d)

.PHONY: all deps test demo bench bench-gpu bench-iqa clean FORCE

all: $(BIN) $(IQA_BIN)

# Objects depend on the flags they were built with, so switching OPENCL or
# WERROR rebuilds (a -Werror run must see every warning).
CONFIG := $(BUILD)/config.txt
$(CONFIG): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CPPFLAGS_ALL) $(WARN) $(CFLAGS) $(LDLIBS_ALL) $(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) $(NVCC_WARN)' | cmp -s - $@ || \
	    echo '$(CC) $(CPPFLAGS_ALL) $(WARN) $(CFLAGS) $(LDLIBS_ALL) $(NVCC) $(NVCC_ARCH) $(NVCCFLAGS) $(NVCC_WARN)' > $@

$(BUILD)/obj/%.o: %.c $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/obj/encoder/main.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

mpegenc-iqa: $(BUILD)/obj/encoder/iqa_main.o $(LIB)
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS_ALL) -o $@

$(BUILD)/tests/%: tests/unit/%.c $(LIB) tests/test.h $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP $< $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -o $@

$(BUILD)/bench/%: tests/bench/%.c $(LIB) $(CONFIG)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(PNG_CFLAGS) $(WARN) $(CFLAGS) -MMD -MP $< $(LIB) $(LDFLAGS) $(LDLIBS_ALL) -o $@

deps:
	@./tools/install-deps.sh

test: deps
	$(MAKE) WERROR=1 $(BIN) $(IQA_BIN) $(TEST_BINS)
	./tests/run.sh

demo: deps
	$(MAKE) $(BIN)
	./tools/demo.sh

bench: $(BIN)
	./tools/bench.sh

# front-end kernels on the solar frames: BACKEND=opencl (default: every
# backend that can run here), checked against cpu before timing
bench-gpu: $(BUILD)/bench/frontend
	./$(BUILD)/bench/frontend $(if $(BACKEND),--backend $(BACKEND))

# metrics: median time per call at 512x512 and 2048x2048, every
# implementation that can run here (C on all cores; CUDA with a GPU)
bench-iqa: $(BUILD)/bench/mad $(BUILD)/bench/bliinds
	./$(BUILD)/bench/mad
	./$(BUILD)/bench/bliinds

clean:
	rm -rf $(BUILD) $(BIN) $(IQA_BIN)

-include $(DEPS)
