"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.storedFileSchema = exports.updateFileSchema = exports.uploadOptionsSchema = exports.listFilesQuerySchema = exports.FILE_SCOPES = exports.FILE_SORT_FIELDS = exports.STORAGE_POLICIES = exports.FILE_SOURCES = exports.FILE_TYPES = void 0;
/** Request and reply schemas of the storage endpoints (interface.md "Stored file", "GET /v1/storage/files"). */
exports.FILE_TYPES = ['IMAGE', 'VIDEO', 'AUDIO'];
exports.FILE_SOURCES = ['USER_UPLOAD', 'AI_GENERATION'];
exports.STORAGE_POLICIES = ['TEMP_UPLOAD', 'TEMP_GENERATION', 'PERMANENT'];
exports.FILE_SORT_FIELDS = ['createdAt', 'size', 'expiresAt', 'externalUserId'];
exports.FILE_SCOPES = ['all', 'mine', 'others'];
const externalUserId = { type: 'string', minLength: 1, maxLength: 128 };
/** Query of GET /v1/storage/files (validated with coercion: query strings are text). Unknown parameters are ignored. */
exports.listFilesQuerySchema = {
    $id: 'ListStoredFilesQuery',
    type: 'object',
    properties: {
        page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
        fileType: { enum: exports.FILE_TYPES },
        source: { enum: exports.FILE_SOURCES },
        storagePolicy: { enum: exports.STORAGE_POLICIES },
        externalUserId,
        sortBy: { enum: exports.FILE_SORT_FIELDS, default: 'createdAt' },
        sortOrder: { enum: ['asc', 'desc'], default: 'desc' },
        scope: { enum: exports.FILE_SCOPES, default: 'all' },
    },
};
/** Options of an upload: query parameters of a raw upload, or form fields beside `file` in a multipart one. */
exports.uploadOptionsSchema = {
    $id: 'UploadStoredFileOptions',
    type: 'object',
    properties: {
        storagePolicy: { enum: ['TEMP_UPLOAD', 'PERMANENT'], default: 'TEMP_UPLOAD' },
        externalUserId,
    },
};
/** Body of PATCH /v1/storage/files/{id}; `externalUserId: null` clears it. */
exports.updateFileSchema = {
    $id: 'UpdateStoredFileRequest',
    type: 'object',
    additionalProperties: false,
    minProperties: 1,
    properties: {
        storagePolicy: { enum: exports.STORAGE_POLICIES },
        externalUserId: { anyOf: [externalUserId, { type: 'null' }] },
    },
};
/** The stored-file record as replied (for the OpenAPI document). */
exports.storedFileSchema = {
    $id: 'StoredFile',
    type: 'object',
    required: ['id', 'fileType', 'mimeType', 'source', 'storagePolicy', 'url', 'size', 'createdAt', 'updatedAt', 'externalUserId', 'expiresAt'],
    properties: {
        id: { type: 'string' },
        fileType: { enum: exports.FILE_TYPES },
        mimeType: { type: 'string' },
        source: { enum: exports.FILE_SOURCES },
        storagePolicy: { enum: exports.STORAGE_POLICIES },
        url: { type: 'string', format: 'uri' },
        size: { type: 'integer', minimum: 0 },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        externalUserId: { type: ['string', 'null'], maxLength: 128 },
        expiresAt: { type: ['string', 'null'], format: 'date-time' },
    },
};
