#!/usr/bin/env python3
"""A model of the NVIDIA field multiplication in src/gpu/cl/field.cl (the even/odd CIOS product),
instruction by instruction with the PTX carry flag, checked against a * b / R mod P for both
BLS12-381 fields on random and extreme inputs. Every chain end that drops its carry asserts that
the carry is zero (the bounds argued in field.cl). Run: python3 scripts/check-mul-chains.py
Keep it in step with FN(mul) and FN(mul_reduce_step) when either changes."""
import random
M=(1<<32)-1
def run(P, n):
    R=1<<(32*n)
    inv=(-pow(P,-1,1<<32))%(1<<32)
    Pl=[(P>>(32*i))&M for i in range(n)]
    cc=[0]
    def madc(a,b,c,hi,use_cc,set_cc,check=False):
        prod=a*b; v=(prod>>32) if hi else (prod&M)
        s=v+c+(cc[0] if use_cc else 0)
        if set_cc: cc[0]=s>>32
        elif check: assert s>>32==0, "lost carry"
        return s&M
    def reduce_step(e,o):
        m=(e[0]*inv)&M
        e[0]=madc(m,Pl[0],e[0],0,0,1); e[1]=madc(m,Pl[0],e[1],1,1,1)
        for j in range(2,n,2):
            e[j]=madc(m,Pl[j],e[j],0,1,1); e[j+1]=madc(m,Pl[j],e[j+1],1,1,1)
        s=e[n]+cc[0]; assert s>>32==0; e[n]=s
        o[0]=madc(m,Pl[1],o[0],0,0,1); o[1]=madc(m,Pl[1],o[1],1,1,1)
        for j in range(2,n-2,2):
            o[j]=madc(m,Pl[j+1],o[j],0,1,1); o[j+1]=madc(m,Pl[j+1],o[j+1],1,1,1)
        o[n-2]=madc(m,Pl[n-1],o[n-2],0,1,1); o[n-1]=madc(m,Pl[n-1],o[n-1],1,1,0,True)
        assert e[0]==0
    def mul(a,b):
        al=[(a>>(32*i))&M for i in range(n)]; bl=[(b>>(32*i))&M for i in range(n)]
        e=[0]*(n+1); o=[0]*n
        for j in range(0,n,2):
            e[j]=(al[j]*bl[0])&M; e[j+1]=(al[j]*bl[0])>>32
            o[j]=(al[j+1]*bl[0])&M; o[j+1]=(al[j+1]*bl[0])>>32
        reduce_step(e,o)
        for i in range(1,n):
            bi=bl[i]; ne=[0]*(n+1); no=[0]*n
            s=o[0]+e[1]; ne[0]=s&M; cc[0]=s>>32
            for j in range(0,n-2,2):
                no[j]=madc(al[j+1],bi,e[j+2],0,1,1); no[j+1]=madc(al[j+1],bi,e[j+3],1,1,1)
            no[n-2]=madc(al[n-1],bi,e[n],0,1,1); no[n-1]=madc(al[n-1],bi,0,1,1,0,True)
            for j in range(1,n): ne[j]=o[j]
            ne[0]=madc(al[0],bi,ne[0],0,0,1); ne[1]=madc(al[0],bi,ne[1],1,1,1)
            for j in range(2,n,2):
                ne[j]=madc(al[j],bi,ne[j],0,1,1); ne[j+1]=madc(al[j],bi,ne[j+1],1,1,1)
            ne[n]=cc[0]
            reduce_step(ne,no)
            e,o=ne,no
        r=sum(o[k]<<(32*k) for k in range(n)) + sum(e[k+1]<<(32*k) for k in range(n))
        assert r < 2*P and r < R
        if r>=P: r-=P
        return r
    Rinv=pow(R,-1,P)
    for t in range(3000):
        a=random.randrange(P); b=random.randrange(P)
        if t<4: a=[0,P-1,1,P-1][t]; b=[0,P-1,P-1,1][t]
        assert mul(a,b)==a*b*Rinv%P,(a,b)
    print("ok",n)
run(0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab,12)
run(0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001,8)
