# Emulates the sm_90 e2m1 upcast asm (decompose_scaled_dots.cpp) for every byte value
# in each of the 4 byte positions, against the e2m1 values' bf16 bits.
import struct, random
def prmt(a,b,c):
    src=[(a>>(8*i))&255 for i in range(4)]+[(b>>(8*i))&255 for i in range(4)]
    r=0
    for i in range(4):
        sel=(c>>(4*i))&15; v=src[sel&7]
        if sel&8: v=255 if v&128 else 0
        r|=v<<(8*i)
    return r
def asm(x):
    m=x&0x77777777; mh=m>>16; s=(x<<4)&0xffffffff
    l01=prmt(0xC0800000,0xC0804000,m); l23=prmt(0xC0800000,0xC0804000,mh)
    h01=prmt(0x3F3F3F00,0x40404040,m); h23=prmt(0x3F3F3F00,0x40404040,mh)
    s01=prmt(s,x,0x5140)&0x80808080; s23=prmt(s,x,0x7362)&0x80808080
    h01|=s01; h23|=s23
    return prmt(l01,h01,0x6240),prmt(l23,h23,0x6240),prmt(l01,h01,0x7351),prmt(l23,h23,0x7351)
vals=[0,0.5,1,1.5,2,3,4,6]
def bf16(code):
    v=vals[code&7]*(-1 if code&8 else 1)
    if code==8: return 0x8000
    return struct.unpack('<I',struct.pack('<f',v))[0]>>16
bad=0
xs=[random.getrandbits(32) for _ in range(200000)]+[b*0x01010101 for b in range(256)]+[b<<(8*k) for b in range(256) for k in range(4)]
for x in xs:
    o=asm(x); by=[(x>>(8*j))&255 for j in range(4)]
    lo=[b&15 for b in by]; hi=[b>>4 for b in by]
    exp=(bf16(lo[0])|bf16(lo[1])<<16, bf16(lo[2])|bf16(lo[3])<<16, bf16(hi[0])|bf16(hi[1])<<16, bf16(hi[2])|bf16(hi[3])<<16)
    if o!=exp: bad+=1
print('checked',len(xs),'bad',bad)
