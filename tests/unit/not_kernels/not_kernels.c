/*
 * A kernel library whose exports are not all kernels (test_launch and the
 * e2e case "limits": a plan naming one is refused at declare time): a const
 * data object (in .rodata), a writable one, a thread-local variable, and
 * one real kernel, which calls libc's exit so that the library needs libc
 * (dlsym on its handle then also finds exit, a function of libc). On
 * x86_64 also kernels that are GNU indirect functions (STT_GNU_IFUNC), and
 * one indirect function whose resolver returns data.
 */
#include <stdint.h>
#include <stdlib.h>

#define NK_EXPORT __attribute__((visibility("default")))

NK_EXPORT const int32_t not_kernels_table[4] = {1, 2, 3, 4};
NK_EXPORT int32_t not_kernels_counter = 7;
NK_EXPORT _Thread_local int32_t not_kernels_tls;

/* The one kernel: *out = 42, or the process exits with code when asked. */
NK_EXPORT void not_kernels_store(int32_t *out, int32_t code);
void not_kernels_store(int32_t *out, int32_t code) {
  if (code != 0) exit(code);
  *out = 42;
}

#if defined(__x86_64__) && defined(__ELF__)
/*
 * not_kernels_cifunc(int32_t *out, int32_t code): *out = 44, an indirect
 * function written in C (as target_clones makes one): its resolver returns
 * a local function, which no dynamic symbol covers.
 */
static void nk_cifunc_body(int32_t *out, int32_t code) {
  (void)code;
  *out = 44;
}
typedef void (*nk_kernel)(int32_t *, int32_t);
/* used: clang sees no call of a resolver named only by the ifunc attribute */
__attribute__((used)) static nk_kernel nk_cifunc_resolve(void) { return nk_cifunc_body; }
NK_EXPORT void not_kernels_cifunc(int32_t *out, int32_t code)
    __attribute__((ifunc("nk_cifunc_resolve")));

/* not_kernels_ifunc_data: an indirect function whose resolver returns
 * writable data (never code, whatever the segment layout). */
static int32_t nk_ifunc_cells[4];
__attribute__((used)) static nk_kernel nk_data_resolve(void) {
  return (nk_kernel)(uintptr_t)nk_ifunc_cells;
}
NK_EXPORT void not_kernels_ifunc_data(int32_t *out, int32_t code)
    __attribute__((ifunc("nk_data_resolve")));

/*
 * not_kernels_ifunc(int32_t *out, int32_t code): *out = 43, a kernel whose
 * ELF symbol is an indirect function. Its resolver returns the body that
 * follows it within the symbol (as an assembly ifunc may be written), so
 * dladdr1 of the address dlsym gives answers with the STT_GNU_IFUNC symbol
 * itself. (A C ifunc or target_clones resolves to a local function no
 * dynamic symbol covers.)
 */
__asm__(".pushsection .text\n"
        ".globl not_kernels_ifunc\n"
        ".type not_kernels_ifunc, @gnu_indirect_function\n"
        "not_kernels_ifunc:\n"
        "  endbr64\n"
        "  leaq 1f(%rip), %rax\n"
        "  ret\n"
        "1:\n"
        "  endbr64\n"
        "  movl $43, (%rdi)\n"
        "  ret\n"
        ".size not_kernels_ifunc, .-not_kernels_ifunc\n"
        ".popsection\n");
#endif
