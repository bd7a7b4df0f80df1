/** Request and reply schemas of the storage endpoints (interface.md "Stored file", "GET /v1/storage/files"). */
export const FILE_TYPES = ['IMAGE', 'VIDEO', 'AUDIO'] as const;
export const FILE_SOURCES = ['USER_UPLOAD', 'AI_GENERATION'] as const;
export const STORAGE_POLICIES = ['TEMP_UPLOAD', 'TEMP_GENERATION', 'PERMANENT'] as const;
export const FILE_SORT_FIELDS = ['createdAt', 'size', 'expiresAt', 'externalUserId'] as const;
export const FILE_SCOPES = ['all', 'mine', 'others'] as const;

export type FileTypeName = (typeof FILE_TYPES)[number];
export type FileSourceName = (typeof FILE_SOURCES)[number];
export type StoragePolicyName = (typeof STORAGE_POLICIES)[number];
export type FileSortField = (typeof FILE_SORT_FIELDS)[number];
export type FileScope = (typeof FILE_SCOPES)[number];

const externalUserId = { type: 'string', minLength: 1, maxLength: 128 } as const;

/** Query of GET /v1/storage/files (validated with coercion: query strings are text). Unknown parameters are ignored. */
export const listFilesQuerySchema = {
  $id: 'ListStoredFilesQuery',
  type: 'object',
  properties: {
    page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 },
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
    fileType: { enum: FILE_TYPES },
    source: { enum: FILE_SOURCES },
    storagePolicy: { enum: STORAGE_POLICIES },
    externalUserId,
    sortBy: { enum: FILE_SORT_FIELDS, default: 'createdAt' },
    sortOrder: { enum: ['asc', 'desc'], default: 'desc' },
    scope: { enum: FILE_SCOPES, default: 'all' },
  },
} as const;

export interface ListFilesQuery {
  page: number;
  limit: number;
  fileType?: FileTypeName;
  source?: FileSourceName;
  storagePolicy?: StoragePolicyName;
  externalUserId?: string;
  sortBy: FileSortField;
  sortOrder: 'asc' | 'desc';
  scope: FileScope;
}

/** Options of an upload: query parameters of a raw upload, or form fields beside `file` in a multipart one. */
export const uploadOptionsSchema = {
  $id: 'UploadStoredFileOptions',
  type: 'object',
  properties: {
    storagePolicy: { enum: ['TEMP_UPLOAD', 'PERMANENT'], default: 'TEMP_UPLOAD' },
    externalUserId,
  },
} as const;

export interface UploadOptions {
  storagePolicy: 'TEMP_UPLOAD' | 'PERMANENT';
  externalUserId?: string;
}

/** Body of PATCH /v1/storage/files/{id}; `externalUserId: null` clears it. */
export const updateFileSchema = {
  $id: 'UpdateStoredFileRequest',
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    storagePolicy: { enum: STORAGE_POLICIES },
    externalUserId: { anyOf: [externalUserId, { type: 'null' }] },
  },
} as const;

export interface UpdateFileBody {
  storagePolicy?: StoragePolicyName;
  externalUserId?: string | null;
}

/** The stored-file record as replied (for the OpenAPI document). */
export const storedFileSchema = {
  $id: 'StoredFile',
  type: 'object',
  required: ['id', 'fileType', 'mimeType', 'source', 'storagePolicy', 'url', 'size', 'createdAt', 'updatedAt', 'externalUserId', 'expiresAt'],
  properties: {
    id: { type: 'string' },
    fileType: { enum: FILE_TYPES },
    mimeType: { type: 'string' },
    source: { enum: FILE_SOURCES },
    storagePolicy: { enum: STORAGE_POLICIES },
    url: { type: 'string', format: 'uri' },
    size: { type: 'integer', minimum: 0 },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    externalUserId: { type: ['string', 'null'], maxLength: 128 },
    expiresAt: { type: ['string', 'null'], format: 'date-time' },
  },
} as const;
