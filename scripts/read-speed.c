// How fast the host moves a parameter file's bytes (already in the page cache) into a 32 MiB
// staging buffer, one slot after another, four passes, one thread, in the ways a mapped
// parameter file's upload could:
//   map          memcpy from a mapping, each slot's pages released after (MADV_DONTNEED)
//   mapkeep      memcpy from a mapping, the pages kept mapped
//   pread        pread into a 96 KiB block, then memcpy into the buffer
//   preaddirect  pread straight into the buffer (what the GPU path's uploads do)
//
//   cc -O2 -o /tmp/read-speed scripts/read-speed.c
//   cat FILE > /dev/null; /tmp/read-speed FILE map|mapkeep|pread|preaddirect
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE map|mapkeep|pread|preaddirect\n", argv[0]);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    size_t len = st.st_size;
    const char *mode = argv[2];
    const size_t slot = 32u << 20, block = 96 * 1024;
    char *staging = aligned_alloc(4096, slot);
    char *buf = aligned_alloc(4096, block);
    char *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (!staging || !buf || map == MAP_FAILED) {
        perror("allocation");
        return 1;
    }
    memset(staging, 1, slot);
    for (int pass = 0; pass < 4; pass++) {
        double t = now();
        unsigned long check = 0;
        for (size_t off = 0; off + slot <= len; off += slot) {
            if (!strcmp(mode, "map") || !strcmp(mode, "mapkeep")) {
                memcpy(staging, map + off, slot);
                if (!strcmp(mode, "map")) madvise(map + off, slot, MADV_DONTNEED);
            } else if (!strcmp(mode, "preaddirect")) {
                if (pread(fd, staging, slot, off) != (ssize_t)slot) return 1;
            } else {
                for (size_t b = 0; b < slot; b += block) {
                    size_t n = slot - b < block ? slot - b : block;
                    if (pread(fd, buf, n, off + b) != (ssize_t)n) return 1;
                    memcpy(staging + b, buf, n);
                }
            }
            check += (unsigned char)staging[slot - 1];
        }
        double took = now() - t;
        printf("%s pass %d: %.3f s, %.2f GB/s (check %lu)\n", mode, pass, took,
               (double)(len / slot * slot) / took / 1e9, check);
    }
    return 0;
}
