// An experiment, not part of the crate: does a thread at Linux's idle scheduling policy that
// maps, touches and unmaps memory (as the background pool of a preempted low prover does) hold
// up a normal thread of the same process that starts a thread and maps memory (as a releasing
// prover does), while normal-priority work fills every core? A thread preempted while it holds
// the process's address-space lock would make the other wait. docs/BENCHMARKS.md (eighteenth
// session) has the results.
//
//   gcc -O2 -pthread -o /tmp/idle-inversion scripts/idle-inversion.c
//   for m in 2 1 0; do (yes >/dev/null & yes >/dev/null & /tmp/idle-inversion $m; kill %1 %2); done
//
// (one `yes` per core). Mode 1: the background thread at SCHED_IDLE; 0: at nice 19; 2: none.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static volatile int stop = 0;
static int idle_on = 1;
static double now_ms(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static void *idle_thread(void *arg){
  (void)arg;
  if (idle_on) { struct sched_param p = {0}; if (sched_setscheduler(0, SCHED_IDLE, &p)) perror("idle"); }
  else { if (nice(19) == -1) perror("nice"); }
  size_t len = 256u << 20;
  while(!stop){
    char *m = mmap(0, len, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
    for(size_t i=0;i<len;i+=4096) m[i]=1;
    munmap(m, len);
  }
  return 0;
}
static void *thread_start(void *a){(void)a;return 0;}
int main(int argc, char **argv){
  int mode = argc > 1 ? atoi(argv[1]) : 1; // 1: SCHED_IDLE, 0: nice 19, 2: no background thread
  idle_on = mode == 1;
  pthread_t t;
  if (mode != 2) pthread_create(&t, 0, idle_thread, 0);
  double worst = 0, sum = 0; int n = 0, over10 = 0;
  double end = now_ms() + 8000;
  usleep(200000);
  while (now_ms() < end){
    double t0 = now_ms();
    // What a releasing prover does: start a thread and map, touch and unmap some memory.
    pthread_t s; pthread_create(&s, 0, thread_start, 0); pthread_join(s, 0);
    char *m = mmap(0, 8u<<20, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
    for(size_t i=0;i<(8u<<20);i+=4096) m[i]=1;
    munmap(m, 8u<<20);
    double d = now_ms() - t0;
    if (d > worst) worst = d;
    if (d > 10) over10++;
    sum += d; n++;
    usleep(5000);
  }
  stop = 1;
  printf("mode %d: %d samples, mean %.2f ms, max %.2f ms, over 10 ms: %d\n", mode, n, sum/n, worst, over10);
  return 0;
}
