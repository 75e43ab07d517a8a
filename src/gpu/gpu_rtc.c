/* gpu_rtc.c: run-time compilation of the embedded kernel sources, for devices that no embedded
 * code object fits (or when WICK_FORCE_RTC=1): NVRTC on CUDA, hipRTC on ROCm.
 * The two libraries have the same shape of API (hipRTC mirrors NVRTC), so one implementation
 * serves both; they are opened with dlopen at first use, like the drivers. Needs no device.
 * A compile is two steps behind wk_gpu_rtc_compiler (gpu_driver.h): prepare (the options and the
 * compiler's identity, which key the persistent cache of gpu_rtc_cache.c) and compile. */
#define _GNU_SOURCE /* dladdr */
#include "gpu_driver.h"
#include "wk_core.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* NVRTC and hipRTC entry points (result enums are ints; programs are opaque pointers). */
typedef struct rtc_api {
    int (*CreateProgram)(void **prog, const char *src, const char *name, int nhdr,
                         const char *const *hdr_src, const char *const *hdr_names);
    int (*CompileProgram)(void *prog, int nopt, const char *const *opts);
    int (*GetProgramLogSize)(void *prog, size_t *size);
    int (*GetProgramLog)(void *prog, char *log);
    int (*GetCodeSize)(void *prog, size_t *size); /* nvrtcGetCUBINSize / hiprtcGetCodeSize */
    int (*GetCode)(void *prog, char *code);
    int (*GetPTXSize)(void *prog, size_t *size);  /* NVRTC only */
    int (*GetPTX)(void *prog, char *ptx);
    int (*DestroyProgram)(void **prog);
    const char *(*GetErrorString)(int r);
    int (*GetNumSupportedArchs)(int *n); /* NVRTC >= 11.2, optional */
    int (*GetSupportedArchs)(int *archs);
    int (*Version)(int *major, int *minor); /* nvrtcVersion / hiprtcVersion, optional */
} rtc_api;

typedef struct rtc_lib {
    const char *label;            /* "NVRTC", "hipRTC" */
    const char *const *names;     /* library names to try, NULL-terminated */
    const char *prefix;           /* "nvrtc", "hiprtc" */
    const char *code_size, *code; /* the entry points that give the binary */
    pthread_once_t once;
    rtc_api api;
    bool ok;
    char reason[256];
    char identity[200]; /* "NVRTC 13.0 /path/libnvrtc.so.13.0.48 (bytes, mtime)": the cache key's */
} rtc_lib;

static const char *const nvrtc_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                          "/usr/local/cuda/lib64/libnvrtc.so", NULL};
/* ROCm 5 ships hipRTC inside libamdhip64; ROCm 6 splits it out into libhiprtc. */
static const char *const hiprtc_names[] = {"libhiprtc.so", "libhiprtc.so.6", "libhiprtc.so.5",
                                           "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5",
                                           "/opt/rocm/lib/libhiprtc.so", NULL};
static rtc_lib nvrtc = {"NVRTC", nvrtc_names, "nvrtc", "GetCUBINSize", "GetCUBIN",
                        PTHREAD_ONCE_INIT, {0}, false, "", ""};
static rtc_lib hiprtc = {"hipRTC", hiprtc_names, "hiprtc", "GetCodeSize", "GetCode",
                         PTHREAD_ONCE_INIT, {0}, false, "", ""};

/* NVRTC has no C library headers: the kernels' #include <stdint.h> is served by this stand-in.
 * hipRTC defines the fixed-width types itself (int64_t as long long), so there only the limit
 * macros are added. */
static const char rtc_stdint_h[] =
    "#pragma once\n"
    "#if !defined(__HIPCC_RTC__)\n"
    "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\n"
    "typedef long int64_t;\ntypedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\n"
    "typedef unsigned int uint32_t;\ntypedef unsigned long uint64_t;\n"
    "typedef long intptr_t;\ntypedef unsigned long uintptr_t;\n"
    "#endif\n"
    "#ifndef INT8_MIN\n"
    "#define INT8_MIN (-128)\n#define INT8_MAX 127\n#define UINT8_MAX 255\n"
    "#define INT16_MIN (-32767-1)\n#define INT16_MAX 32767\n#define UINT16_MAX 65535\n"
    "#define INT32_MIN (-2147483647-1)\n#define INT32_MAX 2147483647\n"
    "#define UINT32_MAX 4294967295u\n#define INT64_MIN (-9223372036854775807LL-1)\n"
    "#define INT64_MAX 9223372036854775807LL\n#define UINT64_MAX 18446744073709551615ULL\n"
    "#endif\n";

static void *rtc_sym(void *lib, const char *prefix, const char *name)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s", prefix, name);
    return dlsym(lib, full);
}

/* The compiler's identity for the run-time compiled kernel cache (gpu_rtc_cache.c): its version
 * and the file the library was loaded from, with that file's size and time, so that an updated
 * library (a patch release keeps major.minor) never serves another's code. */
static void rtc_identify(rtc_lib *L)
{
    int major = 0, minor = 0;
    if (L->api.Version)
        (void)L->api.Version(&major, &minor);
    Dl_info info;
    const char *file = "?";
    struct stat sb;
    memset(&sb, 0, sizeof sb);
    void *sym = NULL;
    memcpy(&sym, &L->api.CreateProgram, sizeof sym);
    if (dladdr(sym, &info) && info.dli_fname) {
        file = info.dli_fname;
        (void)stat(file, &sb);
    }
    snprintf(L->identity, sizeof L->identity, "%s %d.%d %.120s (%lld bytes, %lld)", L->label, major,
             minor, file, (long long)sb.st_size, (long long)sb.st_mtime);
}

static void rtc_load(rtc_lib *L)
{
    void *lib = NULL;
    const char *first_error = NULL;
    for (int i = 0; L->names[i] && !lib; i++) {
        lib = dlopen(L->names[i], RTLD_NOW | RTLD_LOCAL);
        if (!lib && !first_error)
            first_error = dlerror();
        if (lib && !rtc_sym(lib, L->prefix, "CreateProgram")) {
            dlclose(lib);
            lib = NULL;
        }
    }
    if (!lib) {
        snprintf(L->reason, sizeof L->reason, "%s not found (dlopen %s: %s)", L->label,
                 L->names[0], first_error ? first_error : "no library with the entry points");
        return;
    }
    struct { void *dst; const char *name; bool required; } syms[] = {
        {&L->api.CreateProgram, "CreateProgram", true},
        {&L->api.CompileProgram, "CompileProgram", true},
        {&L->api.GetProgramLogSize, "GetProgramLogSize", true},
        {&L->api.GetProgramLog, "GetProgramLog", true},
        {&L->api.GetCodeSize, L->code_size, true},
        {&L->api.GetCode, L->code, true},
        {&L->api.GetPTXSize, "GetPTXSize", false},
        {&L->api.GetPTX, "GetPTX", false},
        {&L->api.DestroyProgram, "DestroyProgram", true},
        {&L->api.GetErrorString, "GetErrorString", true},
        {&L->api.GetNumSupportedArchs, "GetNumSupportedArchs", false},
        {&L->api.GetSupportedArchs, "GetSupportedArchs", false},
        {&L->api.Version, "Version", false},
    };
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        void *p = rtc_sym(lib, L->prefix, syms[i].name);
        if (!p && syms[i].required) {
            snprintf(L->reason, sizeof L->reason, "%s lacks %s%s", L->label, L->prefix,
                     syms[i].name);
            return;
        }
        memcpy(syms[i].dst, &p, sizeof p);
    }
    rtc_identify(L);
    L->ok = true;
}

static void nvrtc_once(void) { rtc_load(&nvrtc); }
static void hiprtc_once(void) { rtc_load(&hiprtc); }

/* The compute capability to compile for: `want` if this NVRTC knows it, else the newest one
 * below it (then PTX, which the driver JIT-compiles). 0 if NVRTC knows none <= want. */
static int nvrtc_pick_arch(const rtc_api *a, int want, bool *exact)
{
    *exact = true;
    int n = 0;
    if (!a->GetNumSupportedArchs || !a->GetSupportedArchs || a->GetNumSupportedArchs(&n) != 0 ||
        n <= 0 || n > 256)
        return want; /* old NVRTC: just try */
    int archs[256];
    if (a->GetSupportedArchs(archs) != 0)
        return want;
    int best = 0;
    for (int i = 0; i < n; i++) {
        if (archs[i] == want)
            return want;
        if (archs[i] < want && archs[i] > best)
            best = archs[i];
    }
    *exact = false;
    return best;
}

/* The program's log, trimmed to fit a message: the first lines carry the first error. */
/* The program's whole log (wk_malloc'd, NUL-terminated), or NULL when there is none. */
static char *rtc_log_text(const rtc_api *a, void *prog)
{
    size_t n = 0;
    if (a->GetProgramLogSize(prog, &n) != 0 || n == 0)
        return NULL;
    char *log = wk_malloc(n + 1);
    if (log && a->GetProgramLog(prog, log) != 0) {
        wk_free(log);
        return NULL;
    }
    if (log)
        log[n] = '\0';
    return log;
}

static void rtc_log(const rtc_api *a, void *prog, char *buf, size_t cap)
{
    char *log = rtc_log_text(a, prog);
    snprintf(buf, cap, "%s", log ? log : "");
    wk_free(log);
}

static rtc_lib *rtc_open(wk_backend_kind kind)
{
    rtc_lib *L = kind == WK_BACKEND_CUDA ? &nvrtc : &hiprtc;
    pthread_once(&L->once, kind == WK_BACKEND_CUDA ? nvrtc_once : hiprtc_once);
    return L;
}

/* The options of job (no contraction, so every backend rounds the same way; C++17 like the AOT
 * build) and the compiler's identity. */
static wk_status rtc_prepare(wk_gpu_rtc_job *job)
{
    rtc_lib *L = rtc_open(job->kind);
    if (!L->ok)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s.cu: run-time compilation unavailable: %s",
                      job->module, L->reason);
    job->ptx = false;
    job->nopt = 0;
    if (job->kind == WK_BACKEND_CUDA) {
        int want = 0;
        bool exact = true;
        if (sscanf(job->arch, "sm_%d", &want) != 1 || want <= 0)
            return wk_err(WK_ERR_INTERNAL, "%s.cu: bad CUDA arch \"%s\"", job->module, job->arch);
        int cc = nvrtc_pick_arch(&L->api, want, &exact);
        if (cc <= 0)
            return wk_err(WK_ERR_NOT_SUPPORTED, "%s.cu: NVRTC supports no arch <= %s", job->module,
                          job->arch);
        job->ptx = !exact;
        snprintf(job->arch_opt, sizeof job->arch_opt, "-arch=%s_%d", job->ptx ? "compute" : "sm",
                 cc);
        const char *o[] = {job->arch_opt, "-fmad=false", "-std=c++17", "-DWK_RTC=1",
                           "-fdevice-syntax-only"}; /* wk_gpu_rtc_check only: the front end */
        job->nopt = job->optimise ? 4 : 5;
        memcpy(job->opts, o, sizeof(char *) * (size_t)job->nopt);
    } else {
        snprintf(job->arch_opt, sizeof job->arch_opt, "--offload-arch=%s", job->arch);
        const char *o[] = {job->arch_opt, job->optimise ? "-O3" : "-fsyntax-only",
                           "-ffp-contract=off", "-std=c++17", "-DWK_RTC=1"};
        job->nopt = 5;
        memcpy(job->opts, o, sizeof o);
    }
    snprintf(job->compiler, sizeof job->compiler, "%s", L->identity);
    return WK_OK;
}

/* The verdict of a front-end-only compile (wk_gpu_rtc_check) that returned r. NVRTC's
 * -fdevice-syntax-only stops after the front end and succeeds (with a PTX that holds no code);
 * an NVRTC that lacks the option (an older CUDA) rejects it, and the program is compiled again
 * with -G (NVVM without its optimiser). hipRTC has no such mode: with -fsyntax-only its clang
 * stops after the front end and hipRTC reports a failed compile, since no code object came out;
 * the log tells a rejected source (a line with "error:") from that. */
static wk_status rtc_front_end_verdict(const wk_gpu_rtc_job *job, const rtc_lib *L, void *prog,
                                       int r, const char *file)
{
    const rtc_api *a = &L->api;
    if (job->kind == WK_BACKEND_CUDA && r == 5 /* NVRTC_ERROR_INVALID_OPTION */) {
        const char *o[8];
        memcpy(o, job->opts, sizeof(char *) * (size_t)job->nopt);
        o[job->nopt - 1] = "-G";
        r = a->CompileProgram(prog, job->nopt, o);
    }
    if (r == 0)
        return WK_OK;
    char *log = rtc_log_text(a, prog);
    wk_status st = WK_OK;
    if (job->kind == WK_BACKEND_CUDA || r != 6 /* HIPRTC_ERROR_COMPILATION */ || !log ||
        strstr(log, "error:"))
        st = wk_err(WK_ERR_DEVICE, "%s: %s front end rejects it for %s (%s): %.900s", file,
                    L->label, job->arch, a->GetErrorString(r), log ? log : "(no log)");
    wk_free(log);
    return st;
}

/* Compiles a prepared job (rtc_prepare). */
static wk_status rtc_run(const wk_gpu_rtc_job *job, void **image, size_t *size)
{
    rtc_lib *L = rtc_open(job->kind);
    if (!L->ok)
        return wk_err(WK_ERR_NOT_SUPPORTED, "%s.cu: run-time compilation unavailable: %s",
                      job->module, L->reason);
    const rtc_api *a = &L->api;
    const char *name = job->module, *arch = job->arch;

    /* Headers by name: the embedded kernels/<x>.h and fpconv.h, plus the stdint.h stand-in. */
    int nh = wk_gpu_embedded_header_count;
    const char **hsrc = wk_malloc(sizeof(char *) * (size_t)(nh + 1));
    const char **hname = wk_malloc(sizeof(char *) * (size_t)(nh + 1));
    if (!hsrc || !hname) {
        wk_free(hsrc);
        wk_free(hname);
        return wk_err(WK_ERR_OUT_OF_MEMORY, "%s.cu: out of host memory", name);
    }
    bool have_stdint = false;
    for (int i = 0; i < nh; i++) {
        hsrc[i] = wk_gpu_embedded_headers[i].text;
        hname[i] = wk_gpu_embedded_headers[i].name;
        have_stdint |= strcmp(hname[i], "stdint.h") == 0;
    }
    if (!have_stdint) {
        hsrc[nh] = rtc_stdint_h;
        hname[nh] = "stdint.h";
        nh++;
    }

    char file[80];
    snprintf(file, sizeof file, "%.70s.cu", name);
    void *prog = NULL;
    wk_status st = WK_OK;
    int r = a->CreateProgram(&prog, job->source, file, nh, hsrc, hname);
    wk_free(hsrc);
    wk_free(hname);
    if (r != 0)
        return wk_err(WK_ERR_DEVICE, "%s: %sCreateProgram: %s", file, L->prefix,
                      a->GetErrorString(r));
    r = a->CompileProgram(prog, job->nopt, job->opts);
    if (!job->optimise) { /* wk_gpu_rtc_check: the front end's verdict, no code */
        st = rtc_front_end_verdict(job, L, prog, r, file);
        a->DestroyProgram(&prog);
        return st;
    }
    if (r != 0) {
        char log[1024];
        rtc_log(a, prog, log, sizeof log);
        st = wk_err(WK_ERR_DEVICE, "%s: %s compile for %s failed (%s): %s", file, L->label,
                    arch, a->GetErrorString(r), log);
        a->DestroyProgram(&prog);
        return st;
    }
    int (*get_size)(void *, size_t *) = job->ptx ? a->GetPTXSize : a->GetCodeSize;
    int (*get)(void *, char *) = job->ptx ? a->GetPTX : a->GetCode;
    size_t n = 0;
    char *code = NULL;
    if (!get_size || !get || get_size(prog, &n) != 0 || n == 0) {
        st = wk_err(WK_ERR_DEVICE, "%s: %s produced no code for %s", file, L->label, arch);
    } else if (!(code = wk_malloc(n + 1))) {
        st = wk_err(WK_ERR_OUT_OF_MEMORY, "%s: out of host memory (%zu bytes)", file, n);
    } else if (get(prog, code) != 0) {
        st = wk_err(WK_ERR_DEVICE, "%s: %s could not return the code", file, L->label);
        wk_free(code);
        code = NULL;
    } else {
        code[n] = '\0'; /* PTX is text: the loader wants it NUL-terminated */
        *image = code;
        *size = n;
    }
    a->DestroyProgram(&prog);
    return st;
}

const wk_gpu_rtc_compiler wk_gpu_rtc_vendor = {"NVRTC/hipRTC", rtc_prepare, rtc_run};

static wk_status rtc_compile(void **image, size_t *size, wk_backend_kind kind, const char *arch,
                             const char *name, const char *src, bool optimise)
{
    wk_gpu_rtc_job job = {.kind = kind, .arch = arch, .module = name, .source = src,
                          .optimise = optimise};
    wk_status st = rtc_prepare(&job);
    return st != WK_OK ? st : rtc_run(&job, image, size);
}

wk_status wk_gpu_rtc_compile(void **image, size_t *size, wk_backend_kind kind, const char *arch,
                             const char *name, const char *src)
{
    return rtc_compile(image, size, kind, arch, name, src, true);
}

wk_status wk_gpu_rtc_check(wk_backend_kind kind, const char *arch, const char *name,
                           const char *src)
{
    void *image = NULL;
    size_t size = 0;
    wk_status st = rtc_compile(&image, &size, kind, arch, name, src, false);
    wk_free(image);
    return st;
}
