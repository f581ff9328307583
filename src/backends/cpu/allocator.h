// Tensor memory on the CPU backend.
#pragma once

namespace mpa::cpu {

// Keeps freed tensor buffers (up to 32 MiB each) in the process heap instead of returning them to the OS:
// glibc hands blocks above 128 KiB back with munmap, so every node's fresh output would page-fault all its memory again
// (measured: a 64 MB elementwise op 2.5 ms into reused memory, 58 ms into fresh pages). Called once by
// every Session; idempotent.
void keep_freed_tensor_memory();

}  // namespace mpa::cpu
