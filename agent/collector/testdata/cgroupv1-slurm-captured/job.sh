#!/bin/bash
# 63 background processes + this shell = 64 processes; two of them multi-threaded.
for i in $(seq 1 61); do sleep 300 & done
python3 -c 'import threading,time
ts=[threading.Thread(target=time.sleep,args=(300,)) for _ in range(3)]
[t.start() for t in ts]; time.sleep(300)' &
python3 -c 'import threading,time
def burn():
    x=0
    while True: x+=1
ts=[threading.Thread(target=burn,daemon=True) for _ in range(2)]
[t.start() for t in ts]; time.sleep(300)' &
dd if=/dev/zero of=/tmp/fixjob.dat bs=1M count=20 status=none
wait
