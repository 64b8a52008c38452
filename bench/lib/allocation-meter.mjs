// Preloaded into a bench server (`node --import ./bench/lib/allocation-meter.mjs ...`): counts the
// bytes its JavaScript allocates on V8's heap, so a bench can divide them by the requests it sent.
// V8 keeps no running total, but every collection reports the heap before and after it: what was
// allocated is each collection's "before" less the previous one's "after", plus what has been
// allocated since the last one. On SIGUSR2 the total so far is written to BENCH_ALLOCATIONS_FILE
// as `<sequence> <bytes>`. Buffers' memory outside the heap (socket data) is not counted.
//
// With BENCH_HEAP_PROFILE_FILE set, the first SIGUSR2 also starts V8's sampling heap profiler
// (keeping the samples of objects already collected, so it shows what was allocated, not what
// survived) and the second writes its profile there: who allocates, by function
// (`node bench/heap-summary.mjs <file> <requests>`).
import fs from 'node:fs';
import { Session } from 'node:inspector';
import v8 from 'node:v8';

const file = process.env.BENCH_ALLOCATIONS_FILE;
const heapProfileFile = process.env.BENCH_HEAP_PROFILE_FILE;
const heapProfiler = new Session();
if (heapProfileFile) heapProfiler.connect();
if (file) {
  let allocated = 0;
  let usedAfterLast = v8.getHeapStatistics().used_heap_size;
  let sequence = 0;
  let profiler = new v8.GCProfiler();
  profiler.start();
  process.on('SIGUSR2', () => {
    const { statistics } = profiler.stop();
    for (const gc of statistics) {
      allocated += Math.max(0, gc.beforeGC.heapStatistics.usedHeapSize - usedAfterLast);
      usedAfterLast = gc.afterGC.heapStatistics.usedHeapSize;
    }
    const now = v8.getHeapStatistics().used_heap_size;
    const total = allocated + Math.max(0, now - usedAfterLast);
    profiler = new v8.GCProfiler();
    profiler.start();
    sequence += 1;
    if (!heapProfileFile) return fs.writeFileSync(file, `${sequence} ${total}\n`);
    if (sequence === 1) {
      heapProfiler.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }, () =>
        fs.writeFileSync(file, `${sequence} ${total}\n`),
      );
    } else {
      heapProfiler.post('HeapProfiler.stopSampling', (error, result) => {
        if (!error) fs.writeFileSync(heapProfileFile, JSON.stringify(result.profile));
        fs.writeFileSync(file, `${sequence} ${total}\n`);
      });
    }
  });
}
