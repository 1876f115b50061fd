#!/usr/bin/env node
'use strict';

/*
 * s3rver as the tests start it: s3rver 3.7.1's own command line, with one
 * defect of its filesystem store mended so that it keeps the promise every S3
 * makes, read-after-write consistency.
 *
 * s3rver writes an object's bytes straight into its final file, and answers
 * the PUT once the request body has been read, not once the file is written:
 * a GET right after a successful PUT (or during one) can return a prefix of
 * the object with a Content-Length to match. AWS S3, and every store pgdirect
 * claims, shows either the old object or the whole new one. Here the bytes go
 * to a temporary file beside the object (its name does not end in the suffix
 * s3rver lists) that is renamed into place once written, before the answer.
 */

const crypto = require('crypto');
const fs = require('fs-extra');
const path = require('path');
const { pipeline, Transform } = require('stream');

const FilesystemStore = require('s3rver/lib/stores/filesystem');

FilesystemStore.prototype.putObject = async function putObject(object) {
  const objectPath = this.getResourcePath(object.bucket, object.key, 'object');
  const temporary = `${objectPath}.writing-${process.pid}-${crypto.randomBytes(6).toString('hex')}`;
  const md5Context = crypto.createHash('md5');
  let size = 0;

  await fs.mkdirp(path.dirname(objectPath));
  try {
    if (Buffer.isBuffer(object.content)) {
      md5Context.update(object.content);
      size = object.content.length;
      await fs.writeFile(temporary, object.content);
    } else {
      await new Promise((resolve, reject) => {
        const count = new Transform({
          transform(chunk, encoding, callback) {
            md5Context.update(chunk, encoding);
            size += chunk.length;
            callback(null, chunk);
          },
        });
        /* resolves once the file stream has flushed and closed */
        pipeline(object.content, count, fs.createWriteStream(temporary), err =>
          err ? reject(err) : resolve(),
        );
      });
    }
    await fs.rename(temporary, objectPath);
  } catch (err) {
    await fs.remove(temporary).catch(() => {});
    throw err;
  }
  const md5 = md5Context.digest('hex');
  await this.putMetadata(object.bucket, object.key, object.metadata, md5);
  return { size, md5 };
};

require('s3rver/bin/s3rver.js');
