import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { LocalBlobStore } from '../../../shared/storage/local-blob-store';
import { readAll } from '../../../shared/storage/blob-store';
import { createBlobStore } from '../../../shared/storage/create-blob-store';
import { loadConfig } from '../../../shared/config/env';
import { S3BlobStore } from '../../../shared/storage/s3-blob-store';

let root: string;
let store: LocalBlobStore;

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-blob-'));
  store = new LocalBlobStore(path.join(root, 'files'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));

describe('LocalBlobStore', () => {
  it('writes a buffer, reads it back whole and by range, and deletes it', async () => {
    expect(await store.put('file_a', bytes, 'image/png')).toEqual({ size: 1000 });
    const whole = await store.get('file_a');
    expect(whole!.size).toBe(1000);
    expect(await readAll(whole!.body)).toEqual(bytes);
    const part = await store.get('file_a', { start: 10, end: 19 });
    expect(part!.size).toBe(1000);
    expect(await readAll(part!.body)).toEqual(bytes.subarray(10, 20));
    const tail = await store.get('file_a', { start: 990 });
    expect(await readAll(tail!.body)).toEqual(bytes.subarray(990));
    await store.delete('file_a');
    expect(await store.get('file_a')).toBeNull();
    expect(fs.readdirSync(path.join(root, 'files'))).toEqual([]);
  });

  it('writes a stream and leaves no temporary file behind', async () => {
    expect(await store.put('file_s', Readable.from([bytes.subarray(0, 400), bytes.subarray(400)]), 'video/mp4')).toEqual({ size: 1000 });
    expect(fs.readdirSync(path.join(root, 'files'))).toEqual(['file_s']);
    expect(await readAll((await store.get('file_s'))!.body)).toEqual(bytes);
  });

  it('keeps the old bytes and no litter when a streamed write fails', async () => {
    await store.put('file_f', Buffer.from('old'), 'audio/mpeg');
    const failing = new Readable({
      read() {
        this.push(Buffer.from('partial'));
        this.destroy(new Error('upstream broke'));
      },
    });
    await expect(store.put('file_f', failing, 'audio/mpeg')).rejects.toThrow('upstream broke');
    expect(fs.readdirSync(path.join(root, 'files'))).toEqual(['file_f']);
    expect((await readAll((await store.get('file_f'))!.body)).toString()).toBe('old');
  });

  it('treats deleting a missing object as done', async () => {
    await expect(store.delete('file_missing')).resolves.toBeUndefined();
  });

  it.each([['../etc/passwd'], ['a/b'], [''], ['.'], ['..'], ['x'.repeat(201)], ['a b']])('refuses the key %j', async (key) => {
    await expect(store.put(key, bytes, 'image/png')).rejects.toThrow('Invalid blob key');
    await expect(store.get(key)).rejects.toThrow('Invalid blob key');
    await expect(store.delete(key)).rejects.toThrow('Invalid blob key');
  });
});

describe('createBlobStore', () => {
  it('uses <homeDir>/files by default', () => {
    const s = createBlobStore(loadConfig({ SWITCHYARD_HOME: '/srv/sy' }, []));
    expect(s).toBeInstanceOf(LocalBlobStore);
    expect((s as LocalBlobStore).root).toBe('/srv/sy/files');
  });

  it('uses S3 when S3_BUCKET is set', () => {
    expect(createBlobStore(loadConfig({ SWITCHYARD_HOME: '/srv/sy', S3_BUCKET: 'media', S3_REGION: 'eu-central-1' }, []))).toBeInstanceOf(S3BlobStore);
  });
});
